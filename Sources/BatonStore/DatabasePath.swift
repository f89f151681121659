import BatonCore
import FoundationEssentials
import Glibc

/// Where the history lives when neither a flag nor the config says.
public enum DatabasePath {
    /// The system daemon's history, as batond.service (`StateDirectory=baton`) and a root batond keep it.
    public static let system = "/var/lib/baton/history.sqlite"

    /// `/var/lib/baton/history.sqlite` for root (systemd's `$STATE_DIRECTORY` when set),
    /// `$XDG_STATE_HOME/baton/history.sqlite` or `~/.local/state/baton/history.sqlite` otherwise.
    public static func `default`(environment: [String: String] = Environment.values("STATE_DIRECTORY", "XDG_STATE_HOME")) -> String {
        if getuid() == 0 {
            if let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first, !state.isEmpty {
                return state + "/history.sqlite"
            }
            return system
        }
        if let state = environment["XDG_STATE_HOME"], !state.isEmpty { return state + "/baton/history.sqlite" }
        return FileManager.default.homeDirectoryForCurrentUser.path + "/.local/state/baton/history.sqlite"
    }
}
