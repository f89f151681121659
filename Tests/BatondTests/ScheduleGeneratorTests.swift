@testable import batond
import BatonCore
import Foundation
import Testing

/// The systemd generator: one timer and one oneshot service per scheduled action, checked by
/// `systemd-analyze verify` (its warnings count as failures: it exits 0 on a bad OnCalendar=).
@Suite("Schedule generator", .offPool)
struct ScheduleGeneratorTests {
    static let analyzer = SystemdCalendar.analyzer

    static var backup: Action {
        var action = Action(name: "backup", exec: ["true"])
        action.schedules = ["*-*-* 03:00:00", "Sat 12:00"]
        action.scheduleJitter = .seconds(300)
        action.catchUp = true
        return action
    }

    @Test("the timer fires at each expression with the jitter, catch-up and a second of accuracy; the service runs baton run --scheduled")
    func text() throws {
        let units = ScheduleUnits.units(Self.backup, config: "/etc/baton/baton.json5", baton: "/usr/bin/baton", socket: "/run/my baton.sock")
        #expect(units.map(\.name) == ["baton-schedule-backup.timer", "baton-schedule-backup.service"])
        let timer = try #require(units.first).text
        #expect(timer.hasSuffix("""
            [Timer]
            OnCalendar=*-*-* 03:00:00
            OnCalendar=Sat 12:00
            AccuracySec=1s
            RandomizedDelaySec=300000000us
            Persistent=true
            Unit=baton-schedule-backup.service

            """))
        let service = try #require(units.last).text
        #expect(service.contains("Type=oneshot\n"))
        #expect(service.contains(#"ExecStart=/usr/bin/baton --socket "/run/my baton.sock" run backup --scheduled=now"#))
        #expect(ScheduleUnits.units(Action(name: "plain", exec: ["true"]), config: "c", baton: "b", socket: nil).isEmpty)
        #expect(ScheduleUnits.escape("100%") == "100%%" && ScheduleUnits.quoted("a$b") == "a$$b")
    }

    static func directory() throws -> String {
        let path = NSTemporaryDirectory() + "baton-generator-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path + "/out", withIntermediateDirectories: true)
        return path
    }

    static func generate(_ config: String?, in directory: String) throws -> Int32 {
        if let config { try config.write(toFile: directory + "/baton.json5", atomically: true, encoding: .utf8) }
        return ScheduleGenerator.run([directory + "/out", directory + "/early", directory + "/late"],
                                     environment: ["BATON_CONFIG": directory + "/baton.json5", "BATON_STATE_DIRECTORY": directory])
    }

    static func listing(_ directory: String) -> [String] {
        (FileManager.default.subpaths(atPath: directory + "/out") ?? []).sorted()
    }

    @Test("from the config named by BATON_CONFIG, units for the scheduled actions only, timers wanted by timers.target; systemd-analyze verify finds nothing",
          .enabled(if: analyzer != nil))
    func generated() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = """
            { actions: { backup: { exec: ["true"], schedule: ["*-*-* 03:00:00", "Sat 12:00"], scheduleJitter: "5m", catchUp: true },
                         tick: { exec: ["true"], schedule: "*:*:0/5" }, plain: { exec: ["true"] } } }
            """
        #expect(try Self.generate(config, in: directory) == 0)
        #expect(Self.listing(directory) == [
            "baton-schedule-backup.service", "baton-schedule-backup.timer", "baton-schedule-tick.service", "baton-schedule-tick.timer",
            "timers.target.wants", "timers.target.wants/baton-schedule-backup.timer", "timers.target.wants/baton-schedule-tick.timer",
        ])
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: directory + "/out/timers.target.wants/baton-schedule-tick.timer")
            == "../baton-schedule-tick.timer")
        let units = Self.listing(directory).filter { !$0.hasPrefix("timers.target.wants") }.map { directory + "/out/" + $0 }
        let (status, said) = try Self.run(try #require(Self.analyzer), ["verify", "--man=no"] + units)
        #expect(status == 0 && said.isEmpty, "systemd-analyze verify: \(said)")
    }

    /// Runs a program; its exit status and everything it wrote.
    static func run(_ path: String, _ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("a missing config writes nothing and succeeds; a config with errors and no record of batond's writes nothing and succeeds")
    func refused() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try Self.generate(nil, in: directory) == 0)
        #expect(try Self.generate(#"{ actions: { b: { exec: ["true"], schedule: "daily", catchUp: "yes" } } }"#, in: directory) == 0)
        #expect(Self.listing(directory).isEmpty)
    }

    @Test("a webhook's credential is not needed (the generator runs before batond, without its credentials)", .enabled(if: analyzer != nil))
    func credentials() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = """
            { webhooks: { listen: "127.0.0.1:9470", hooks: { d: { action: "b", secret: { credential: "d" }, signature: "gitlab" } } },
              actions: { b: { exec: ["true"], schedule: "daily" } } }
            """
        let status = try Self.generate(config, in: directory)
        #expect(status == 0 && Self.listing(directory).contains("baton-schedule-b.timer"), "\(Self.listing(directory))")
    }
}
