import BatonCore
import FoundationEssentials
import Glibc

/// What `baton` asks of the systemd it runs under.
enum SystemdUnits {
    /// Whether systemd is the init system (`sd_booted`: /run/systemd/system exists).
    static var underSystemd: Bool {
        var info = stat()
        return stat("/run/systemd/system", &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// `systemctl daemon-reload`: its exit status and what it wrote.
    static func daemonReload() -> (Int32, String) {
        let (status, output) = ChildProcess.run("/usr/bin/systemctl", ["daemon-reload"])
        return (status, String(output.trimmingWhitespace()))
    }
}
