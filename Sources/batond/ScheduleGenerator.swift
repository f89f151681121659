import BatonCore
import CBatonSystem
import FoundationEssentials

/// `baton-schedule-generator NORMAL-DIR [EARLY-DIR LATE-DIR]`: the systemd generator (a link to
/// batond). At boot and at each `systemctl daemon-reload` it reads batond's config
/// (`$BATON_CONFIG`, else /etc/baton/baton.json5) and writes each scheduled action's timer and
/// service into NORMAL-DIR, the timer wanted by timers.target. A missing config writes nothing.
/// A config with errors never fails the reload (systemd would leave the timers `failed`): the
/// generator says why (in the journal, `journalctl -t baton-schedule-generator`, and on stderr,
/// which is PID 1's console) and writes the timers of the config batond last
/// applied, from the record batond keeps (`ScheduleRecord`), or none where there is no record.
enum ScheduleGenerator {
    static let name = "baton-schedule-generator"
    static let defaultConfig = "/etc/baton/baton.json5"

    static func run(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32 {
        guard let directory = arguments.first, arguments.count == 1 || arguments.count == 3 else {
            return fail("usage: \(name) NORMAL-DIR [EARLY-DIR LATE-DIR] (systemd runs it)")
        }
        let path = environment["BATON_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultConfig
        guard FileManager.default.fileExists(atPath: path) else { return 0 }
        let baton = URL(fileURLWithPath: Self.executable()).deletingLastPathComponent().appendingPathComponent("baton").path
        let units: [ScheduleUnits.Unit]
        do {
            var reader = ConfigReader()
            reader.readsSecrets = false
            let config = try Config.parse(try Config.contents(of: path), file: path, reader: reader)
            units = config.actions.flatMap { ScheduleUnits.units($0, config: path, baton: baton, socket: config.socket) }
        } catch {
            units = lastGood(environment, baton: baton, problem: "\(error)")
        }
        do {
            try write(units, into: directory)
        } catch {
            return fail("cannot write into \(directory): \(error)")
        }
        return 0
    }

    /// The units of the record batond keeps, said on stderr with the config's `problem`.
    static func lastGood(_ environment: [String: String], baton: String, problem: String) -> [ScheduleUnits.Unit] {
        let directory = environment["BATON_STATE_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 } ?? ScheduleRecord.defaultDirectory
        guard let record = ScheduleRecord.read(from: directory) else {
            say("\(problem)\nno schedules written: no record of the last good ones in \(directory)/\(ScheduleRecord.fileName)")
            return []
        }
        let actions = record.actions
        say("\(problem)\nkeeping the timers of the config batond last applied (\(directory)/\(ScheduleRecord.fileName)): "
            + (actions.isEmpty ? "none" : actions.map(\.name).joined(separator: ", ")))
        return actions.flatMap { ScheduleUnits.units($0, config: record.config, baton: baton, socket: record.socket) }
    }

    /// Writes the units, and links each timer into timers.target.wants.
    static func write(_ units: [ScheduleUnits.Unit], into directory: String) throws {
        let wants = directory + "/timers.target.wants"
        for unit in units {
            try Data(unit.text.utf8).write(to: URL(fileURLWithPath: directory + "/" + unit.name))
            guard unit.name.hasSuffix(".timer") else { continue }
            try FileManager.default.createDirectory(atPath: wants, withIntermediateDirectories: true)
            let link = wants + "/" + unit.name
            try? FileManager.default.removeItem(atPath: link)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "../" + unit.name)
        }
    }

    /// This binary's own path (the generator is a link to it; baton is installed beside it).
    static func executable() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "/usr/bin/batond"
    }

    /// Says `message` on stderr, and to journald where it listens (at a daemon-reload; not yet at
    /// boot): systemd 252 gives a generator's stderr to its own console, not to the journal.
    private static func say(_ message: String) {
        Stdio.error.write(Data("\(name): \(message)\n".utf8))
        let datagram = NativeJournal.encode(["MESSAGE": message, "PRIORITY": "4", "SYSLOG_IDENTIFIER": name])
        _ = datagram.withUnsafeBytes { baton_unix_sendto(Log.journalSocket, $0.baseAddress, $0.count) }
    }

    private static func fail(_ message: String) -> Int32 {
        say(message)
        return 1
    }
}
