import BatonCore
import BatonStore
import BatonIPC
import Foundation
import Testing

/// `needs` with real processes over the socket: c needs a and b. Both succeed → c runs after
/// both; a fails → c ends failure without starting, naming a's run; a second trigger of c while
/// it waits follows c's policy; a crash of batond while c waits keeps it waiting, and it starts after.
@Suite("End to end: needs", .serialized, .offPool)
struct NeedsEndToEndTests {
    /// a and b write `start NAME` and `end NAME` to the log around reading their gate, and fail
    /// when `fail-NAME` exists in the gate's directory; c writes `run c`.
    static func config(_ gates: [String: FifoGate], log: String) -> String {
        func gated(_ name: String) -> String {
            """
            \(name): { exec: ["sh", "-c", "echo start \(name) >> \\"$LOG\\"; echo up; cat \\"$GATE\\" > /dev/null; echo end \(name) >> \\"$LOG\\"; test ! -e \\"$GATE-fail\\""],
                       env: { GATE: "\(gates[name]!.path)", LOG: "\(log)" } },
            """
        }
        return """
            {
              requireUser: false,
              maxConcurrentRuns: 8,
              actions: {
                \(gated("a"))
                \(gated("b"))
                c: { exec: ["sh", "-c", "echo run c >> \\"$LOG\\""], env: { LOG: "\(log)" }, needs: ["a", "b"], policy: "reject" },
              },
            }
            """
    }

    static func gates() throws -> [String: FifoGate] {
        try Dictionary(uniqueKeysWithValues: ["a", "b"].map { ($0, try FifoGate()) })
    }

    static func log(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    static func logPath() -> String { NSTemporaryDirectory() + "baton-needs-" + UUID().uuidString + ".log" }

    @Test("a and b succeed: c waits, says for what (status, show, the trigger's answer), and runs after both; show lists the runs both ways")
    func runsAfterBoth() throws {
        let gates = try Self.gates()
        let log = Self.logPath()
        defer { try? FileManager.default.removeItem(atPath: log) }
        let daemon = try Daemon(config: Self.config(gates, log: log))
        let answer = try PolicyTests.trigger(daemon, "c")
        #expect(answer.run?.id == 1 && answer.run?.phase == .queued, "\(String(describing: answer.run))")
        #expect(answer.run?.needs?.map(\.text) == ["a run 2", "b run 3"], "\(String(describing: answer.run?.needs))")
        let status = try daemon.baton("status")
        #expect(status.stdout.contains("queued (run 1) waiting for a run 2, b run 3"), "\(status.stdout)")
        #expect(status.stdout.contains("c: needs a, b (each run starts once their runs succeeded)"), "\(status.stdout)")
        gates["a"]!.release()
        #expect(try PolicyTests.waitFor(daemon, run: 2)?.phase == .success)
        let show = try daemon.baton("show", "1")
        #expect(show.stdout.contains("  needs: a run 2 (success), b run 3 (loading)\n"), "\(show.stdout)")
        #expect(show.stdout.contains("  waiting for b run 3\n"), "\(show.stdout)")
        gates["b"]!.release()
        let c = try PolicyTests.waitFor(daemon, run: 1)
        #expect(c?.phase == .success, "\(String(describing: c))")
        let order = Self.log(log)
        #expect(order.last == "run c" && order.filter { $0.hasPrefix("end") }.count == 2, "c ran before a and b ended: \(order)")
        let needed = try daemon.baton("show", "2")
        #expect(needed.stdout.contains("  needed by: c run 1 (success)\n"), "\(needed.stdout)")
        let json = try daemon.baton("show", "1", "--json").stdout
        #expect(json.contains(#""needs""#) && json.contains(#""run" : 3"#), "\(json)")
    }

    @Test("a fails: c ends failure without starting, naming a's run; b is not cancelled; a second trigger of c while it waits is refused busy (c's policy)")
    func failsWithoutStarting() throws {
        let gates = try Self.gates()
        let log = Self.logPath()
        defer { try? FileManager.default.removeItem(atPath: log) }
        let daemon = try Daemon(config: Self.config(gates, log: log))
        #expect(try PolicyTests.trigger(daemon, "c").run?.phase == .queued)
        let second = try PolicyTests.trigger(daemon, "c")
        #expect(second.error?.code == .busy, "\(String(describing: second.error))")
        #expect(FileManager.default.createFile(atPath: gates["a"]!.path + "-fail", contents: nil))
        gates["a"]!.release()
        let c = try PolicyTests.waitFor(daemon, run: 1)
        #expect(c?.phase == .failure && c?.error == "needs a: run 2 failed" && c?.startedAt == nil, "\(String(describing: c))")
        let show = try daemon.baton("show", "1")
        #expect(show.stdout.contains("needs a: run 2 failed"), "\(show.stdout)")
        gates["b"]!.release()
        #expect(try PolicyTests.waitFor(daemon, run: 3)?.phase == .success, "b ran on: it may serve others")
        #expect(!Self.log(log).contains("run c"), "\(Self.log(log))")
    }

    @Test("a crash of batond while c waits: the new batond adopts a and b, c is still waiting for them, and it starts after both")
    func waitsAcrossACrash() throws {
        let gates = try Self.gates()
        let log = Self.logPath()
        defer { try? FileManager.default.removeItem(atPath: log) }
        let config = Self.config(gates, log: log)
        let daemon = try Daemon(config: config)
        #expect(try PolicyTests.trigger(daemon, "c").run?.phase == .queued)
        guard Eventually.until("a and b started before the crash: \(Self.log(log))", { Self.log(log).filter({ $0.hasPrefix("start") }).count >= 2 }) else { return }
        #expect(Self.log(log).filter({ $0.hasPrefix("start") }).count == 2, "\(Self.log(log))")
        // A run's process group rides with the history's next write (its output, `up`): a crash
        // before it is written leaves a run no one can adopt (interrupted), which is not what this
        // test is about. Wait until both are recorded.
        let history = try Connection(path: daemon.database, readOnly: true)
        let recorded = { try history.scalar("SELECT count(*) FROM runs WHERE id IN (2, 3) AND pgid IS NOT NULL")?.int64 ?? 0 }
        guard try Eventually.until("a's and b's process groups recorded before the crash", { try recorded() == 2 }) else { return }
        daemon.crash()
        let restarted = try Daemon(config: config, reusing: daemon)
        let status = try restarted.baton("status")
        #expect(status.stdout.contains("queued (run 1) waiting for a run 2, b run 3"), "\(status.stdout)")
        gates["a"]!.release()
        gates["b"]!.release()
        let c = try PolicyTests.waitFor(restarted, run: 1)
        #expect(c?.phase == .success, "\(String(describing: c))")
        #expect(Self.log(log).last == "run c", "\(Self.log(log))")
    }
}
