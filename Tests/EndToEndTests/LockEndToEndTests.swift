import BatonCore
import BatonIPC
import Foundation
import Testing

/// `locks` with real processes: runs of actions sharing a lock never overlap, a waiting run says
/// what it waits for, `limits` lets N hold a lock, a cancel drops a waiter, a crash requeues one.
@Suite("End to end: locks between actions", .serialized, .offPool)
struct LockEndToEndTests {
    /// Each action writes `start N` and `end N` to the log around reading its own gate.
    static func config(_ gates: [String: FifoGate], log: String, locks: [String: String] = [:], limits: String = #"{ "heavy-io": 2 }"#) -> String {
        func action(_ name: String, _ held: String) -> String {
            """
            \(name): { exec: ["sh", "-c", "echo start $BATON_RUN_ID >> \\"$LOG\\"; cat \\"$GATE\\" > /dev/null; echo end $BATON_RUN_ID >> \\"$LOG\\""],
                       env: { GATE: "\(gates[name]!.path)", LOG: "\(log)" }, locks: \(locks[name] ?? held), policies: ["queue", "join"] },
            """
        }
        return """
            {
              socketMode: "0666",
              maxConcurrentRuns: 8,
              limits: \(limits),
              actions: {
                \(action("migrate", #"["db"]"#))
                \(action("backup", #"["db", "heavy-io"]"#))
                \(action("scan", #"["heavy-io"]"#))
                \(action("index", #"["heavy-io"]"#))
              },
            }
            """
    }

    static func gates() throws -> [String: FifoGate] {
        try Dictionary(uniqueKeysWithValues: ["migrate", "backup", "scan", "index"].map { ($0, try FifoGate()) })
    }

    static func trigger(_ daemon: Daemon, _ action: String) throws -> Response {
        try Client(path: daemon.socket).call(Request(op: .trigger, action: action, detach: true))
    }

    static func waitFor(_ daemon: Daemon, run: Int64) throws -> RunSnapshot? {
        try Client(path: daemon.socket).call(Request(op: .wait, run: run)).run
    }

    static func log(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test("two actions sharing a lock never overlap: the second waits queued, says for what, and starts once the first has ended")
    func neverOverlap() throws {
        let gates = try Self.gates()
        let log = NSTemporaryDirectory() + "baton-locks-" + UUID().uuidString + ".log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let live = try Daemon(config: Self.config(gates, log: log))
        let first = try Self.trigger(live, "migrate")
        #expect(first.run?.phase == .loading && first.run?.waiting == nil, "\(String(describing: first.run))")
        let second = try Self.trigger(live, "backup")
        #expect(second.run?.phase == .queued, "\(String(describing: second.run))")
        #expect(second.run?.waiting?.text == "waiting for lock db, held by migrate run 1", "\(String(describing: second.run?.waiting))")
        let status = try live.baton("status")
        #expect(status.stdout.contains("queued (run 2) waiting for lock db, held by migrate run 1"), "\(status.stdout)")
        let show = try live.baton("show", "2")
        #expect(show.stdout.contains("  waiting for lock db, held by migrate run 1\n"), "\(show.stdout)")

        gates["migrate"]!.release()
        #expect(try Self.waitFor(live, run: 1)?.phase == .success)
        gates["backup"]!.release()
        #expect(try Self.waitFor(live, run: 2)?.phase == .success)
        #expect(Self.log(log) == ["start 1", "end 1", "start 2", "end 2"], "the runs overlapped: \(Self.log(log))")
        let story = try live.baton("show", "2").stdout
        #expect(story.contains("queued → loading  (attempt 1; took locks db, heavy-io)"), "\(story)")
        let json = try live.baton("show", "2", "--json").stdout
        #expect(json.contains(#""locks" : ["#), "\(json)")
    }

    @Test("limits: two runs hold heavy-io at once, the third waits naming both; cancelling the waiter ends it at once, queued")
    func semaphoreAndCancel() throws {
        let gates = try Self.gates()
        let log = NSTemporaryDirectory() + "baton-locks-" + UUID().uuidString + ".log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let daemon = try Daemon(config: Self.config(gates, log: log))
        #expect(try Self.trigger(daemon, "scan").run?.phase == .loading)
        #expect(try Self.trigger(daemon, "index").run?.phase == .loading)
        let third = try Self.trigger(daemon, "backup")
        #expect(third.run?.waiting?.text == "waiting for lock heavy-io (2 at once), held by scan run 1, index run 2",
                "\(String(describing: third.run?.waiting))")
        let cancel = try daemon.baton("cancel", "3")
        #expect(cancel.code == 0, "\(cancel.stderr)")
        let cancelled = try Self.waitFor(daemon, run: 3)
        #expect(cancelled?.phase == .cancelled && cancelled?.startedAt == nil, "\(String(describing: cancelled))")
        // A run that took its locks goes once the others are gone; migrate never waited (db was free).
        #expect(try Self.trigger(daemon, "migrate").run?.phase == .loading)
        for name in ["scan", "index", "migrate"] { gates[name]!.release() }
        for run in [1, 2, 4] as [Int64] { #expect(try Self.waitFor(daemon, run: run)?.phase == .success) }
        #expect(!Self.log(log).contains("start 3"), "the cancelled waiter ran: \(Self.log(log))")
    }

    @Test("a crash while a run waits for a lock: the holder ends interrupted, the waiter is queued again and runs")
    func crashWhileWaiting() throws {
        let gates = try Self.gates()
        let log = NSTemporaryDirectory() + "baton-locks-" + UUID().uuidString + ".log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        // Without the shim: the holder is killed by the crash's recovery, as this test means.
        let config = Self.config(gates, log: log).replacingOccurrences(of: "exec: [", with: "survivesRestart: false, exec: [")
        let daemon = try Daemon(config: config)
        #expect(try Self.trigger(daemon, "migrate").run?.phase == .loading)
        #expect(try Self.trigger(daemon, "backup").run?.waiting?.lock == "db")
        // `loading` is stamped when the process starts, not when it has written its first line.
        Eventually.until("run 1 wrote its start mark") { Self.log(log).contains("start 1") }
        daemon.crash()
        let restarted = try Daemon(config: config, reusing: daemon)
        gates["backup"]!.release()
        #expect(try Self.waitFor(restarted, run: 2)?.phase == .success)
        let holder = try restarted.baton("show", "1").stdout
        #expect(holder.contains("interrupted"), "\(holder)")
        #expect(Self.log(log) == ["start 1", "start 2", "end 2"], "\(Self.log(log))")
    }

    @Test("reload: a bad limit is refused naming it and the old config stays; a good one gives new triggers new locks, and runs keep theirs")
    func reload() throws {
        let gates = try Self.gates()
        let log = NSTemporaryDirectory() + "baton-locks-" + UUID().uuidString + ".log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let daemon = try Daemon(config: Self.config(gates, log: log))
        #expect(try Self.trigger(daemon, "migrate").run?.phase == .loading)
        #expect(try Self.trigger(daemon, "backup").run?.waiting?.lock == "db")

        try Self.config(gates, log: log, limits: #"{ "heavy-io": 2, nope: 3 }"#).write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let refused = try daemon.baton("reload")
        #expect(refused.code != 0 && refused.stderr.contains(#"limits.nope: no action holds lock "nope""#), "\(refused.stderr)")

        // Now backup holds nothing and scan holds db: the queued backup keeps the locks it was triggered with.
        try Self.config(gates, log: log, locks: ["backup": "[]", "scan": #"["db"]"#]).write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        #expect(try daemon.baton("reload").code == 0)
        #expect(try daemon.baton("status").stdout.contains("queued (run 2) waiting for lock db, held by migrate run 1"))
        let scan = try Self.trigger(daemon, "scan")
        #expect(scan.run?.waiting?.text == "waiting for lock db, held by migrate run 1", "\(String(describing: scan.run?.waiting))")
        gates["migrate"]!.release()
        #expect(try Self.waitFor(daemon, run: 1)?.phase == .success)
        gates["backup"]!.release()
        #expect(try Self.waitFor(daemon, run: 2)?.phase == .success)
        gates["scan"]!.release()
        #expect(try Self.waitFor(daemon, run: 3)?.phase == .success)
        #expect(Self.log(log) == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"], "\(Self.log(log))")
    }
}
