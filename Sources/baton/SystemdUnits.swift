import BatonCore
import FoundationEssentials
import Glibc

/// What `baton` asks of the systemd it runs under.
enum SystemdUnits {
    static let systemctl = "/usr/bin/systemctl"

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
        let (status, output) = ChildProcess.run(systemctl, ["daemon-reload"])
        return (status, String(output.trimmingWhitespace()))
    }

    /// `systemctl VERB UNIT...` (start, restart, stop): its exit status and what it wrote.
    static func perform(_ verb: String, _ units: [String]) -> (Int32, String) {
        let (status, output) = ChildProcess.run(systemctl, [verb, "--"] + units)
        return (status, String(output.trimmingWhitespace()))
    }

    /// The state of each of `units` (timers), as systemd reports it; nil when systemctl fails.
    static func timers(_ units: [String]) -> [TimerState]? {
        guard !units.isEmpty else { return [] }
        // Times in UTC with English day names, which TimerState.time reads whatever the local zone.
        let environment = ProcessInfo.processInfo.environment.merging(["TZ": "UTC", "LC_ALL": "C"]) { $1 }
        let (status, output) = ChildProcess.run(systemctl, ["show", "--timestamp=unix", "-p", TimerState.properties, "--"] + units,
                                                environment: environment)
        return status == 0 ? TimerState.parse(output) : nil
    }
}
