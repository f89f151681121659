import BatonCore
import FoundationEssentials

/// `baton-schedule-generator NORMAL-DIR [EARLY-DIR LATE-DIR]`: the systemd generator (a link to
/// batond). At boot and at each `systemctl daemon-reload` it reads batond's config
/// (`$BATON_CONFIG`, else /etc/baton/baton.json5) and writes each scheduled action's timer and
/// service into NORMAL-DIR, the timer wanted by timers.target. A missing config writes nothing;
/// a config with errors writes nothing and says why (systemd logs a generator's stderr), so that
/// a broken edit never leaves timers of an older config behind.
enum ScheduleGenerator {
    static let name = "baton-schedule-generator"
    static let defaultConfig = "/etc/baton/baton.json5"

    static func run(_ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32 {
        guard let directory = arguments.first, arguments.count == 1 || arguments.count == 3 else {
            return fail("usage: \(name) NORMAL-DIR [EARLY-DIR LATE-DIR] (systemd runs it)")
        }
        let path = environment["BATON_CONFIG"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultConfig
        guard FileManager.default.fileExists(atPath: path) else { return 0 }
        let config: Config
        var reader = ConfigReader()
        reader.readsSecrets = false
        do { config = try Config.parse(try Config.contents(of: path), file: path, reader: reader) } catch { return fail("\(error)\nno schedules written") }
        let baton = URL(fileURLWithPath: Self.executable()).deletingLastPathComponent().appendingPathComponent("baton").path
        do {
            for action in config.actions {
                let units = ScheduleUnits.units(action, config: path, baton: baton, socket: config.socket)
                try write(units, into: directory)
            }
        } catch {
            return fail("cannot write into \(directory): \(error)")
        }
        return 0
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

    private static func fail(_ message: String) -> Int32 {
        Stdio.error.write(Data("\(name): \(message)\n".utf8))
        return 1
    }
}
