import BatonCore
import BatonIPC
import Foundation
import Testing

/// Wrong answers found by trying to break batond (issue 12, items 4, 5, 6, 10 and 13): each test
/// failed before its fix.
@Suite("End to end: answers that used to be wrong", .offPool)
struct DefectTests {
    static let config = """
        { socketMode: "0666", maxConcurrentRuns: 4, actions: {
            hello: { exec: ["true"], policies: ["join"] },
            stubborn: { exec: ["sh", "-c", "trap '' TERM; sleep 100 & wait"], timeout: "1s", killGrace: "100ms" },
            flaky: { exec: ["false"], retry: { attempts: 3, backoff: "1h" } },
            backup: { exec: ["sleep", "300"], params: { disk: {} }, keyParams: ["disk"] },
        } }
        """

    @Test("a process that ignores SIGTERM: the run ends once its group is gone after killGrace, not seconds later")
    func endsWhenGroupGone() throws {
        let daemon = try Daemon(config: Self.config)
        let result = try daemon.baton("run", "stubborn")
        #expect(result.code == 1)
        let row = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT reason, ended_at - started_at, pgid IS NULL FROM runs WHERE id = 1"])
        let fields = row.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|")
        #expect(fields.first == "timeout")
        // timeout 1 s + killGrace 0.1 s; the old pump gave zombies 2 s more before it gave up (3.0 s).
        let micros = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
        #expect(micros > 1_000_000 && micros < 2_500_000, "the run took \(micros) µs")
    }

    @Test("cancel while waiting to retry: listed as cancelled, and the waiting client is told who cancelled")
    func cancelRetrying() throws {
        let daemon = try Daemon(config: Self.config)
        let waiter = try Client(path: daemon.socket)
        try waiter.send(Request(op: .trigger, action: "flaky"))
        try daemon.waitForLog("run 1 flaky: loading → retrying")
        let cancel = try Client(path: daemon.socket).call(Request(op: .cancel, action: "flaky"))
        #expect(cancel.runs?.map(\.id) == [1])
        #expect(cancel.runs?.first?.phase == .cancelled)
        var final: Response?
        while let line = try waiter.receive(timeout: .seconds(10)), final == nil { if line.ok != nil { final = line } }
        #expect(final?.run?.phase == .cancelled)
        #expect(final?.run?.cancelledBy == getuid())
        #expect(final?.run?.error == nil, "not the last attempt's error")
        let text = try daemon.baton("wait", "1")
        #expect(text.stdout.contains("cancelled"))
    }

    @Test("status shows every key in flight of an action, not one")
    func statusEveryKey() throws {
        let daemon = try Daemon(config: Self.config)
        for disk in ["sda", "sdb", "sdc"] { _ = try daemon.baton("run", "backup", "-p", "disk=\(disk)", "--detach") }
        let status = try daemon.baton("status")
        for (id, disk) in [(1, "sda"), (2, "sdb"), (3, "sdc")] {
            #expect(status.stdout.contains("(run \(id), disk=\(disk))"), "\(status.stdout)")
        }
        _ = try daemon.baton("cancel", "backup", "--no-wait")
    }

    @Test("the CLI's words: allowed policies without duplicates, cancel of an ended run, unknown actions, -n1, --until before --since, {}")
    func wording() throws {
        let daemon = try Daemon(config: Self.config)
        let policy = try daemon.baton("run", "hello", "--policy", "replace")
        #expect(policy.code == 2)
        #expect(policy.stderr.contains("(allowed: reject, join)"), "\(policy.stderr)")
        #expect(try daemon.baton("run", "hello").code == 0)
        let again = try daemon.baton("cancel", "1")
        #expect(again.code == 0)
        #expect(again.stdout.hasPrefix("hello run 1 had already ended: success"), "\(again.stdout)")
        #expect(try daemon.baton("stats", "nosuch").code == 2)
        #expect(try daemon.baton("watch", "nosuch").code == 2)
        let one = try daemon.baton("history", "-n1", "--format", "csv")
        #expect(one.code == 0)
        #expect(one.stdout.split(separator: "\n").count == 2, "a header and one run: \(one.stdout)")
        let window = try daemon.baton("history", "--since", "2026-11-02", "--until", "2026-11-01")
        #expect(window.code == 2)
        #expect(window.stderr.contains("is before --since"))
        let json = try daemon.baton("show", "1", "--json")
        #expect(json.stdout.contains(#""params" : {}"#), "\(json.stdout)")
    }

    @Test("a config with several errors at start: one line each, not joined on one line")
    func configErrorsOneLineEach() throws {
        let directory = NSTemporaryDirectory() + "baton-errors-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try #"{ actions: { a: { exec: ["x"], timeout: "soon" }, b: { policy: "rejct" } } }"#
            .write(toFile: directory + "/c.json5", atomically: true, encoding: .utf8)
        let result = try execute(Binaries.batond, ["--config", directory + "/c.json5", "--socket", directory + "/s", "--database", directory + "/h"])
        #expect(result.code == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.contains { $0.contains("actions.a.timeout: expected a duration") })
        #expect(lines.contains { $0.contains("actions.b.policy: expected one of") })
        #expect(!result.stderr.contains(" | "))
    }
}
