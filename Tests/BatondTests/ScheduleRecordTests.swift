@testable import batond
import BatonCore
import Foundation
import Testing

/// batond keeps the schedules of the config it applied; the generator writes their timers when
/// the config on disk has errors, instead of failing (systemd would leave every timer `failed`).
@Suite("Schedule generator: the last good timers")
struct ScheduleRecordTests {
    static let good = """
        { actions: { backup: { exec: ["true"], schedule: ["*-*-* 03:00:00"], scheduleJitter: "5m", catchUp: true },
                     tick: { exec: ["true"], schedule: "*:*:0/5" }, plain: { exec: ["true"] } } }
        """

    /// Parses `text` as batond does and keeps its record in `directory`, as batond under systemd would.
    static func keep(_ text: String, in directory: String) throws {
        let path = directory + "/applied.json5"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let config = try Config.parse(try Config.contents(of: path), file: path, reader: ConfigReader())
        ScheduleRecord.keep(config, path: directory + "/baton.json5", environment: ["STATE_DIRECTORY": directory + ":/elsewhere"])
    }

    static func text(_ directory: String, _ unit: String) throws -> String {
        try String(contentsOfFile: directory + "/out/" + unit, encoding: .utf8)
    }

    @Test("a config with errors: exit 0, the timers of the config batond last applied, word for word, and why on stderr")
    func brokenKeepsLastGood() throws {
        let directory = try ScheduleGeneratorTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try ScheduleGeneratorTests.generate(Self.good, in: directory) == 0)
        let fromConfig = try ["baton-schedule-backup.timer", "baton-schedule-backup.service", "baton-schedule-tick.timer"].map { try Self.text(directory, $0) }
        try Self.keep(Self.good, in: directory)
        #expect(FileManager.default.fileExists(atPath: directory + "/" + ScheduleRecord.fileName))

        try FileManager.default.removeItem(atPath: directory + "/out")
        try FileManager.default.createDirectory(atPath: directory + "/out", withIntermediateDirectories: true)
        // One action's schedule broken (and another's field misspelt): batond refuses the whole config.
        let broken = Self.good.replacingOccurrences(of: "*:*:0/5", with: "every five seconds").replacingOccurrences(of: "plain: { exec", with: "plain: { exce")
        #expect(try ScheduleGeneratorTests.generate(broken, in: directory) == 0)
        #expect(ScheduleGeneratorTests.listing(directory) == [
            "baton-schedule-backup.service", "baton-schedule-backup.timer", "baton-schedule-tick.service", "baton-schedule-tick.timer",
            "timers.target.wants", "timers.target.wants/baton-schedule-backup.timer", "timers.target.wants/baton-schedule-tick.timer",
        ])
        let kept = try ["baton-schedule-backup.timer", "baton-schedule-backup.service", "baton-schedule-tick.timer"].map { try Self.text(directory, $0) }
        #expect(kept == fromConfig)
    }

    @Test("the record stands for timers only: a name or expression that could break out of a unit file is left out")
    func recordIsChecked() throws {
        var record = ScheduleRecord(try Config.parse(Data(Self.good.utf8), file: "c", reader: ConfigReader()), path: "/etc/baton/baton.json5")
        record.entries.append(.init(action: "evil\n[Service]", schedules: ["daily"], jitter: nil, catchUp: false))
        record.entries.append(.init(action: "sneaky", schedules: ["daily\nExecStart=/bin/sh"], jitter: nil, catchUp: false))
        #expect(record.actions.map(\.name) == ["backup", "tick"])
        #expect(record.actions.first?.scheduleJitter == .seconds(300) && record.actions.first?.catchUp == true)
    }

    @Test("batond keeps no record where systemd gave it no state directory")
    func noStateDirectory() throws {
        let directory = try ScheduleGeneratorTests.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = try Config.parse(Data(Self.good.utf8), file: "c", reader: ConfigReader())
        ScheduleRecord.keep(config, path: "c", environment: ["BATON_STATE_DIRECTORY": directory])
        #expect(ScheduleRecord.read(from: directory) == nil)
    }
}
