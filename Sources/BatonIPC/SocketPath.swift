import Foundation

/// Where the daemon's socket is when nothing says otherwise.
public enum SocketPath {
    /// `$XDG_RUNTIME_DIR/baton.sock` for a normal user, `/run/baton/baton.sock` for root or when
    /// `XDG_RUNTIME_DIR` is unset (as under systemd).
    public static func `default`(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if getuid() != 0, let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime + "/baton.sock"
        }
        if getuid() != 0 {
            return NSTemporaryDirectory() + "baton-\(getuid())/baton.sock"
        }
        return "/run/baton/baton.sock"
    }
}
