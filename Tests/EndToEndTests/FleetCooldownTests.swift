import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// `cooldown` across three real batond hosts on one PostgreSQL database: the key's row keeps
/// its last success, so whichever host a trigger lands on, inside the window it runs nothing.
@Suite("End to end: cooldown across a fleet", .serialized, .offPool)
struct FleetCooldownTests {
    static func trigger(_ host: Daemon, _ action: String, force: Bool? = nil) throws -> Response {
        try Client(path: host.socket).call(Request(op: .trigger, action: action, detach: true, force: force))
    }

    @Test("a storm over three hosts racing a success's end, then after it: one run; every trigger joins it or is cooled with it, recorded against it; --force runs and its success starts the window again")
    func storm() throws {
        let gate = try FifoGate()
        let hosts = try FleetTests.fleet(3, actions: FleetTests.gated(gate, policy: "join", extra: #", cooldown: "1h", force: true"#))
        let id = try #require(try FleetTests.trigger(hosts[0], "gated").run?.id)
        // The run's end races the storm: a trigger before its success is committed joins it, one
        // after is cooled with it; none makes a run, whether the key was released yet or not.
        let racing = Collected<Response>()
        inParallel(45) { index in
            if index == 0 { gate.release() }
            if let answer = try? FleetTests.trigger(hosts[index % 3], "gated") { racing.append(answer) }
        }
        #expect(try FleetTests.wait(hosts[1], run: id)?.phase == .success)
        // Every host's `status` shows the key cooling with that success, whichever host ran it,
        // once its feed has read the end (a bounded poll: the feed reads on its own clock).
        for host in hosts {
            try Eventually.value("\(host.socket)'s status says gated cools after run \(id)", within: 10, {
                try Client(path: host.socket).call(Request(op: .status)).actions?.first { $0.name == "gated" }?.cooling?.map(\.id) ?? []
            }) { $0 == [id] }
        }
        let after = Collected<Response>()
        inParallel(45) { index in if let answer = try? FleetTests.trigger(hosts[index % 3], "gated") { after.append(answer) } }

        #expect(racing.all.count == 45 && after.all.count == 45)
        #expect(racing.all.allSatisfy { $0.run?.id == id && ($0.decision == .joined || $0.decision == .cooled) },
                "\(racing.all.map { "\($0.decision.map { "\($0)" } ?? $0.error?.message ?? "?") \($0.run?.id ?? -1)" })")
        #expect(after.all.allSatisfy { $0.decision == .cooled && $0.run?.id == id && $0.run?.phase == .success && $0.cooldown == 3_600_000_000 },
                "\(after.all.map { "\($0.decision.map { "\($0)" } ?? $0.error?.message ?? "?") \($0.run?.id ?? -1)" })")
        let cooled = 45 + racing.all.count { $0.decision == .cooled }
        let triggers = try Client(path: hosts[2].socket).call(Request(op: .show, run: id)).detail?.triggers ?? []
        #expect(triggers.count { $0.decision == .cooled } == cooled && triggers.count { $0.decision == .joined } == 90 - cooled)
        let history = try JSONSerialization.jsonObject(with: Data(try hosts[0].baton("history", "--json").stdout.utf8)) as? [[String: Any]]
        #expect((history ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value } == [id], "one run in the fleet's history")
        // The CLI on another host than the run's answers with the success, exit 0.
        let cli = try hosts[2].baton("run", "gated")
        #expect(cli.code == 0 && cli.stdout.contains("gated run \(id) succeeded ") && cli.stdout.contains(" ago; cooldown 1h, nothing run"),
                "\(cli.stdout) \(cli.stderr)")

        // --force runs inside the window; its success is the key's last success from then on.
        let forced = try Self.trigger(hosts[1], "gated", force: true)
        let second = try #require(forced.run?.id)
        #expect(forced.decision == .created && second != id)
        gate.release()
        #expect(try FleetTests.wait(hosts[1], run: second)?.phase == .success)
        let next = try Self.trigger(hosts[0], "gated")
        #expect(next.decision == .cooled && next.run?.id == second)
    }

    @Test("retention keeps the success a key cools on: maxRunsPerAction 1, k=x then k=y succeed, a prune, then k=x is cooled with its own success on any host (before: the fleet forgot it and ran k=x)")
    func pruneKeepsCooling() throws {
        let hosts = try FleetTests.fleet(2, actions: #"cool: { exec: ["true"], cooldown: "1h", params: { k: {} }, keyParams: ["k"] },"#,
                                         settings: "retention: { maxRunsPerAction: 1 },")
        #expect(try hosts[0].baton("run", "cool", "-p", "k=x").code == 0)
        #expect(try hosts[0].baton("run", "cool", "-p", "k=y").code == 0)
        let pruned = try hosts[1].baton("prune")
        #expect(pruned.code == 0, "\(pruned.stderr)")
        let again = try hosts[1].baton("run", "cool", "-p", "k=x", "--json")
        #expect(again.code == 0 && again.stdout.contains(#""decision" : "cooled""#), "\(again.stdout) \(again.stderr)")
    }

    @Test("after the window a trigger runs, on any host; inside it every trigger is cooled with the last success")
    func afterTheWindow() throws {
        let hosts = try FleetTests.fleet(3, actions: #"tick: { exec: ["true"], cooldown: "1s" },"#)
        let first = try #require(try FleetTests.trigger(hosts[0], "tick", detach: false).run)
        #expect(first.phase == .success)
        // A bounded poll across the hosts until a trigger runs: every one before it is cooled.
        var index = 0
        let ran = try Eventually.value("a trigger not cooled", {
            defer { index += 1 }
            return try FleetTests.trigger(hosts[index % 3], "tick")
        }) { next in
            if next.decision == .cooled { #expect(next.run?.id == first.id) }
            return next.decision != .cooled
        }
        #expect(ran.decision == .created, "\(ran.error?.message ?? "")")
        let run = try #require(ran.run)
        // The window is measured on the database's clock, which is this machine's here: the run
        // that ran was created at least the cooldown after the success ended.
        let ended = try #require(first.endedAt)
        #expect(run.queuedAt.rawValue - ended.rawValue >= 1_000_000, "created \(run.queuedAt.rawValue - ended.rawValue) µs after the success")
    }

    @Test("fleet migration 10 gives each key the last success the history has (the latest end), and none to a key that never succeeded")
    func migration() throws {
        let db = try PGConnection(try Postgres.server().database())
        #expect(try FleetSchema.migrate(db, through: 9) == 9)
        for (id, key, phase, ended) in [(1, "a", "success", 10), (2, "a", "success", 30), (3, "a", "failure", 40), (4, "b", "failure", 20),
                                        (5, "a", "success", 20)] {
            try db.query("""
                INSERT INTO runs (id, action, key, phase, policy, params, queued_at, ended_at, host, incarnation)
                VALUES ($1, $2, $2, $3, 'reject', '{}', 1, $4, 'web-1', 'web-1/1/old')
                """, [String(id), key, phase, String(ended)])
        }
        for key in ["a", "b"] { try db.query("INSERT INTO keys (key) VALUES ($1)", [key]) }
        #expect(try FleetSchema.migrate(db, through: 10) == 10)
        #expect(try db.query("SELECT key, last_success_run, last_success_at FROM keys ORDER BY key").rows == [["a", "2", "30"], ["b", nil, nil]])
    }
}
