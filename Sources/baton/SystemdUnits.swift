import FoundationEssentials

/// What `baton` asks of the systemd it runs under.
enum SystemdUnits {
    /// Whether systemd is the init system (`sd_booted`: /run/systemd/system exists).
    static var underSystemd: Bool {
        var info = stat()
        return stat("/run/systemd/system", &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// `systemctl daemon-reload`: its exit status and what it wrote.
    static func daemonReload() -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/systemctl")
        process.arguments = ["daemon-reload"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        do { try process.run() } catch { return (127, "cannot start systemctl: \(error)") }
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
