import BatonCore
import FoundationEssentials
import Glibc

/// Where the daemon's socket is when nothing says otherwise.
public enum SocketPath {
    /// `$XDG_RUNTIME_DIR/baton.sock` for a normal user, `/run/baton/baton.sock` for root or when
    /// `XDG_RUNTIME_DIR` is unset (as under systemd).
    public static func `default`(environment: [String: String] = Environment.values("XDG_RUNTIME_DIR", "TMPDIR")) -> String {
        if getuid() != 0, let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime + "/baton.sock"
        }
        if getuid() != 0 {
            return temporaryDirectory + "baton-\(getuid())/baton.sock"
        }
        return "/run/baton/baton.sock"
    }

    /// `$TMPDIR` with a slash at its end, else `/tmp/` (as NSTemporaryDirectory read it).
    private static var temporaryDirectory: String {
        guard let directory = Environment.value("TMPDIR"), !directory.isEmpty else { return "/tmp/" }
        return directory.hasSuffix("/") ? directory : directory + "/"
    }

    /// The system daemon's socket, as batond.socket and a root batond make it.
    public static let system = "/run/baton/baton.sock"

    /// Where a client looks: the user's own daemon when its socket exists, else the system
    /// daemon's when that exists, else the user's default (so the error names it).
    public static func forClient(environment: [String: String] = Environment.values("XDG_RUNTIME_DIR", "TMPDIR"),
                                 exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }) -> String {
        let own = `default`(environment: environment)
        if exists(own) { return own }
        if exists(system) { return system }
        return own
    }

    /// Where a client looks when given no path: `$BATON_SOCKET` when set (and not empty), else
    /// `forClient` (the `baton` CLI and `BatonClient` both look so).
    public static func search(environment: [String: String] = Environment.values("BATON_SOCKET", "XDG_RUNTIME_DIR", "TMPDIR"),
                              exists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }) -> String {
        if let given = environment["BATON_SOCKET"], !given.isEmpty { return given }
        return forClient(environment: environment, exists: exists)
    }
}
