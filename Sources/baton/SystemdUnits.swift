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

    /// Where systemd finds the package's and `make install`'s units.
    static let unitDirectories = ["/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/usr/lib/systemd/system", "/lib/systemd/system"]

    /// Whether batond.service is installed where systemd looks for units.
    static var batondInstalled: Bool {
        unitDirectories.contains { access($0 + "/batond.service", F_OK) == 0 }
    }

    /// `systemctl daemon-reload`: its exit status and what it wrote.
    static func daemonReload() -> (Int32, String) {
        let (status, output) = ChildProcess.run("/usr/bin/systemctl", ["daemon-reload"])
        return (status, String(output.trimmingWhitespace()))
    }
}
