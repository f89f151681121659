import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// `on: { awaiting }` across a fleet (issue 40, item 5): a run that begins to wait for approval
/// fires its awaiting hook once fleet-wide, in the transaction of the host that made the wait,
/// not once per host that reads it from the feed.
@Suite("End to end: a fleet's awaiting hook", .serialized, .offPool)
struct FleetAwaitingHookTests {
    @Test("two hosts, one waiting run on each: each fires its awaiting hook exactly once (one hook run each, told BATON_HOOK_EVENT=awaiting), and neither starts")
    func onceFleetWide() throws {
        let marker = NSTemporaryDirectory() + "baton-fleet-awaiting-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            deploy: { exec: ["true"], params: { ref: {} }, keyParams: ["ref"], approve: { by: ["user:root"] }, on: { awaiting: "announce" } },
            announce: { exec: ["sh", "-c", "echo $BATON_HOOK_RUN_ID $BATON_HOOK_EVENT $BATON_HOOK_PARAM_REF >> \(marker)"] },
            \(FleetBarrier.action)
            """, conninfo: conninfo, settings: "requireUser: false,")
        defer { for host in hosts { host.stop() } }
        let db = try PGConnection(conninfo)
        let count = "SELECT count(*) FROM runs WHERE action = 'announce' AND phase = 'success'"
        var runs: [String] = []
        // One after the other: announce's policy (reject) would refuse a hook while the other runs.
        for (index, ref) in ["a", "b"].enumerated() {
            let answer = try Client(path: hosts[index].socket).call(Request(op: .trigger, action: "deploy", params: ["ref": ref], detach: true))
            runs.append(String(try #require(answer.run?.id, "\(answer)")))
            try Eventually.until("hook run \(index + 1) ended") { try db.query(count).first?[0] == String(index + 1) }
        }
        // Every host's feed has delivered both waits, and what a host did in answer is committed.
        try FleetBarrier.pass(hosts)
        let hooks = try db.query("SELECT hook_run, hook_event, host FROM runs WHERE action = 'announce' ORDER BY hook_run").rows
        #expect(hooks.map { [$0[0], $0[1]] } == runs.map { [$0, "awaiting"] }, "one hook run for each waiting run: \(hooks)")
        #expect(hooks.map { $0[2] } == ["web-1", "web-2"], "each made by the host whose transaction made the wait: \(hooks)")
        let lines = ((try? String(contentsOfFile: marker, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init).sorted()
        #expect(lines == ["\(runs[0]) awaiting a", "\(runs[1]) awaiting b"], "\(lines)")
        for run in runs { #expect(try db.query("SELECT phase FROM runs WHERE id = $1", [run]).first?[0] == "queued", "it still waits") }
    }

    @Test("a hook's run that waits for approval (deploy, fired by build's success) announces itself once with on.chain, in the transaction of build's end")
    func chainedHookRun() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            build: { exec: ["true"], on: { success: "deploy" } },
            deploy: { exec: ["true"], approve: { by: ["user:root"] }, on: { awaiting: "announce", chain: true } },
            announce: { exec: ["true"] },
            \(FleetBarrier.action)
            """, conninfo: conninfo, settings: "requireUser: false,")
        defer { for host in hosts { host.stop() } }
        let build = try #require(try Client(path: hosts[0].socket).call(Request(op: .trigger, action: "build", detach: true)).run?.id)
        #expect(try FleetTests.wait(hosts[0], run: build)?.phase == .success)
        let db = try PGConnection(conninfo)
        let deploy = try db.query("SELECT id FROM runs WHERE action = 'deploy' AND hook_run = $1", [String(build)]).first?[0]
        #expect(deploy != nil, "build's success made a deploy run")
        let count = "SELECT count(*) FROM runs WHERE action = 'announce' AND phase = 'success'"
        try Eventually.until("its hook run ended") { try db.query(count).first?[0] == "1" }
        try FleetBarrier.pass(hosts)
        let hooks = try db.query("SELECT hook_run, hook_event FROM runs WHERE action = 'announce'").rows
        #expect(hooks.map { [$0[0], $0[1]] } == [[deploy, "awaiting"]], "once: \(hooks)")
    }

    @Test("a trigger on web-2 that joins a run waiting for approval on web-1 is answered with the wait, as its maker was; both answers' until is the wait row's, by the database's clock")
    func joinerToldTheWait() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            deploy: { exec: ["true"], policy: "join", approve: { by: ["user:root"], timeout: "1h" } },
            """, conninfo: conninfo, settings: "requireUser: false,")
        defer { for host in hosts { host.stop() } }
        let made = try Client(path: hosts[0].socket).call(Request(op: .trigger, action: "deploy", detach: true))
        let joined = try Client(path: hosts[1].socket).call(Request(op: .trigger, action: "deploy", detach: true))
        let run = try #require(made.run?.id, "\(made)")
        #expect(made.decision == .created && joined.decision == .joined && joined.run?.id == run, "\(made) \(joined)")
        let db = try PGConnection(conninfo)
        let until = try db.query("SELECT until FROM approvals WHERE run_id = $1", [String(run)]).first?[0].flatMap { Int64($0) }
        #expect(until != nil)
        for answer in [made, joined] {
            #expect(answer.run?.approval?.by == ["user:root"] && answer.run?.approval?.until?.rawValue == until, "\(String(describing: answer.run))")
        }
    }

    @Test("a hook's run that waits for approval, without on.chain, announces nothing (a hook fires one level deep)")
    func unchainedHookRunSilent() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(1, actions: """
            build: { exec: ["true"], on: { success: "deploy" } },
            deploy: { exec: ["true"], approve: { by: ["user:root"] }, on: { awaiting: "announce" } },
            announce: { exec: ["true"] },
            \(FleetBarrier.action)
            """, conninfo: conninfo, settings: "requireUser: false,")
        defer { for host in hosts { host.stop() } }
        let build = try #require(try Client(path: hosts[0].socket).call(Request(op: .trigger, action: "build", detach: true)).run?.id)
        #expect(try FleetTests.wait(hosts[0], run: build)?.phase == .success)
        let db = try PGConnection(conninfo)
        try Eventually.until("build's success made a deploy run, which waits") {
            try db.query("SELECT count(*) FROM runs WHERE action = 'deploy' AND hook_run = $1", [String(build)]).first?[0] == "1"
        }
        // A hook the end's transaction would fire is written with the deploy run; one the feed would fire, by the barrier.
        try FleetBarrier.pass(hosts)
        #expect(try db.query("SELECT count(*) FROM runs WHERE action = 'announce'").first?[0] == "0")
    }

    @Test("an awaiting hook held behind its busy key is told the run as it began to wait (queued, no exit, no output), though it was approved and ran meanwhile")
    func contextAtTheWait() throws {
        let gate = NSTemporaryDirectory() + "baton-fleet-awaiting-gate-\(UUID().uuidString)"
        let marker = NSTemporaryDirectory() + "baton-fleet-awaiting-\(UUID().uuidString)"
        defer { for path in [gate, marker] { try? FileManager.default.removeItem(atPath: path) } }
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(1, actions: """
            deploy: { exec: ["sh", "-c", "echo deployed"], approve: { by: ["user:root"], self: true }, on: { awaiting: "announce" } },
            announce: { exec: ["sh", "-c", "while [ ! -e \(gate) ]; do sleep 0.05; done; [ -n \\"$BATON_HOOK_RUN_ID\\" ] || exit 0; echo \\"$BATON_HOOK_EVENT $BATON_HOOK_PHASE x$BATON_HOOK_EXIT_CODE $(cat \\"$BATON_HOOK_OUTPUT\\" 2>/dev/null)\\" >> \(marker)"],
                        policy: "queue" },
            """, conninfo: conninfo, settings: "requireUser: false,")
        defer { for host in hosts { host.stop() } }
        let client = try Client(path: hosts[0].socket)
        // The hook's key busy: a run of announce of its own, held at the gate.
        let busy = try #require(try client.call(Request(op: .trigger, action: "announce", detach: true)).run?.id)
        let db = try PGConnection(conninfo)
        try Eventually.until("the busy announce run loading") { try db.query("SELECT phase FROM runs WHERE id = $1", [String(busy)]).first?[0] == "loading" }
        let deploy = try #require(try client.call(Request(op: .trigger, action: "deploy", detach: true)).run?.id)
        try Eventually.until("its awaiting hook's run is queued behind the busy one") {
            try db.query("SELECT count(*) FROM runs WHERE action = 'announce' AND hook_run = $1", [String(deploy)]).first?[0] == "1"
        }
        let yes = try hosts[0].baton("approve", String(deploy))
        #expect(yes.code == 0, "\(yes.stderr)")
        #expect(try FleetTests.wait(hosts[0], run: deploy)?.phase == .success, "approved, it ran while its hook waited")
        FileManager.default.createFile(atPath: gate, contents: nil)
        let told = Eventually.value("the hook's line in \(marker)", { (try? String(contentsOfFile: marker, encoding: .utf8)) ?? "" }) { $0.contains("\n") }
        #expect(told == "awaiting queued x \n", "as one machine tells it, at the wait: \(told)")
    }

    @Test("an awaiting hook the database refuses (a trigger on runs raises for its run) does not refuse the user's trigger: the run is made and waits, the hook's failure logged")
    func failingHookGoesOn() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(1, actions: """
            deploy: { exec: ["true"], approve: { by: ["user:root"] }, on: { awaiting: "announce" } },
            announce: { exec: ["true"] },
            """, conninfo: conninfo, settings: "requireUser: false,")
        defer { for host in hosts { host.stop() } }
        let db = try PGConnection(conninfo)
        try db.execute("""
            CREATE FUNCTION refuse_announce() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.action = 'announce' THEN RAISE EXCEPTION 'announce refused by the test'; END IF; RETURN NEW; END $$;
            CREATE TRIGGER refuse_announce BEFORE INSERT ON runs FOR EACH ROW EXECUTE FUNCTION refuse_announce();
            """)
        let answer = try Client(path: hosts[0].socket).call(Request(op: .trigger, action: "deploy", detach: true))
        let run = try #require(answer.run?.id, "the trigger is answered with its run: \(answer)")
        #expect(answer.decision == .created)
        #expect(try db.query("SELECT phase FROM runs WHERE id = $1", [String(run)]).first?[0] == "queued", "it waits")
        #expect(try db.query("SELECT count(*) FROM approvals WHERE run_id = $1", [String(run)]).first?[0] == "1", "its wait is written")
        try hosts[0].waitForLog("the awaiting hook of run \(run) (deploy) could not fire")
        #expect(try db.query("SELECT count(*) FROM runs WHERE action = 'announce'").first?[0] == "0")
    }
}
