import Foundation
import Testing

/// `baton run --scheduled` with real runs: one run per action and slot, whatever the policy, and
/// a slot that already ran runs nothing and says so, also after a restart.
@Suite("End to end: schedule slots", .serialized, .offPool)
struct ScheduleEndToEndTests {
    /// `gate` blocks on a FIFO until the test writes to it; `every5` is on a five-second schedule.
    static func config(fifo: String, schedule: Bool) -> String {
        """
        {
          socketMode: "0666",
          actions: {
            gate: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(fifo)" }, policy: "replace" },
            \(schedule ? #"every5: { exec: ["true"], schedule: "*:*:0/5", policy: "queue" },"# : "")
          },
        }
        """
    }

    @Test("two triggers of one slot share one run, even under replace; the slot's repeat runs nothing and says so; a restart remembers")
    func oneRunPerSlot() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(fifo: gate.path, schedule: false))
        let first = try daemon.baton("run", "gate", "--scheduled=2025-12-01T03:00:00Z", "--detach", "--json")
        #expect(first.code == 0 && first.stdout.contains(#""decision" : "created""#), "\(first.stdout) \(first.stderr)")
        let second = try daemon.baton("run", "gate", "--scheduled=@1764558000", "--detach", "--json")
        #expect(second.code == 0 && second.stdout.contains(#""decision" : "joined""#) && second.stdout.contains(#""id" : 1,"#),
                "the same slot (03:00:00Z as epoch seconds) joins run 1: \(second.stdout) \(second.stderr)")
        gate.release()
        #expect(try daemon.baton("wait", "1").code == 0)

        let repeated = try daemon.baton("run", "gate", "--scheduled=2025-12-01T03:00:00Z")
        #expect(repeated.code == 0, "\(repeated.stderr)")
        #expect(repeated.stdout.contains("gate slot ") && repeated.stdout.contains(" already ran: run 1 succeeded, nothing run"),
                "\(repeated.stdout)")
        let json = try daemon.baton("run", "gate", "--scheduled=@1764558000123456us", "--json")
        #expect(json.stdout.contains(#""decision" : "slotRan""#) && json.stdout.contains(#""slot" : 1764558000000000"#),
                "a time within the second is the same slot: \(json.stdout)")
        let history = try daemon.baton("history", "--json")
        #expect(history.stdout.components(separatedBy: #""action" : "gate""#).count == 2, "one run: \(history.stdout)")
        #expect(history.stdout.contains(#""via" : "schedule""#), "recorded as triggered by the schedule: \(history.stdout)")
        let show = try daemon.baton("show", "1")
        #expect(show.stdout.contains("scheduled slot already ran") && show.stdout.contains("joined"), "\(show.stdout)")
        daemon.stop()

        let restarted = try Daemon(config: Self.config(fifo: gate.path, schedule: false), reusing: daemon)
        let after = try restarted.baton("run", "gate", "--scheduled=@1764558000")
        #expect(after.code == 0 && after.stdout.contains("already ran: run 1 succeeded"), "the restart forgot the slot: \(after.stdout)")
        restarted.stop()
    }

    @Test("another slot is a new run, decided by the policy; a timer's time finds its slot in the schedule",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze")))
    func slotsOfASchedule() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(fifo: gate.path, schedule: true))
        // 1764561605 is a firing of *:*:0/5; the timer elapsed 0.4 s and then 1.2 s after it.
        let late = try daemon.baton("run", "every5", "--scheduled=@1764561605400000us", "--json")
        #expect(late.stdout.contains(#""slot" : 1764561605000000"#) && late.stdout.contains(#""phase" : "success""#), "\(late.stdout) \(late.stderr)")
        let later = try daemon.baton("run", "every5", "--scheduled=@1764561606200000us", "--json")
        #expect(later.stdout.contains(#""decision" : "slotRan""#), "\(later.stdout) \(later.stderr)")
        let next = try daemon.baton("run", "every5", "--scheduled=@1764561610", "--json")
        #expect(next.stdout.contains(#""decision" : "created""#) && next.stdout.contains(#""slot" : 1764561610000000"#), "\(next.stdout)")
        let schedules = try daemon.baton("schedules", "--json")
        #expect(schedules.stdout.contains(#""action" : "every5""#) && schedules.stdout.contains(#""lastSlot" : 1764561610000000"#)
                && schedules.stdout.contains(#""run" : 2"#), "\(schedules.stdout) \(schedules.stderr)")
        let bad = try daemon.baton("run", "every5", "--scheduled=@us")
        #expect(bad.code == 2 && bad.stderr.contains("--scheduled expects"), "\(bad.stderr)")
        daemon.stop()
    }
}
