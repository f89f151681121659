import BatonCore
import BatonFleet
import Foundation
import Testing

/// A fleet's run starts, and is approved, by the definition it was triggered with (audit D4), as
/// one machine's queued run keeps its `Action` across a reload: stored by fingerprint in
/// `definitions` (migration 0027) and read by whichever host starts or decides it.
@Suite("End to end: a fleet run keeps the definition it was triggered with", .serialized, .offPool)
struct FleetRunDefinitionTests {
    /// A host whose `ship` writes `word` to `marker`; the first run of a test then waits at `gate` (policy queue).
    static func config(_ conninfo: String, host: String, lease: String, word: String, gate: FifoGate, marker: String,
                       extra: String = "") -> String {
        """
        { postgres: "\(conninfo)", host: "\(host)", lease: "\(lease)", requireUser: false, actions: {
            ship: { exec: ["sh", "-c", "echo \(word) >> \(marker); if mkdir \(marker).first 2>/dev/null; then cat \\"$GATE\\" > /dev/null; fi"],
                    env: { GATE: "\(gate.path)" }, policy: "queue", \(extra) },
        } }
        """
    }

    static func lines(_ marker: String) -> [String] {
        ((try? String(contentsOfFile: marker, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    /// Run 1 of `ship` at its gate on `host`, run 2 queued behind it; their ids.
    static func queueBehindGate(_ host: Daemon, _ gate: FifoGate) throws -> (first: Int64, queued: Int64, gate: Int32) {
        let first = try #require(try FleetTests.trigger(host, "ship").run?.id)
        let fd = gate.opened()
        let queued = try #require(try FleetTests.trigger(host, "ship").run?.id)
        #expect(queued != first)
        return (first, queued, fd)
    }

    @Test("a run queued as exec A on web-1 runs A after web-1 reloads exec B; a run triggered after the reload runs B; also a run made before fleet version 28 (no revision: its fingerprint's definitions row)",
          arguments: [false, true])
    func reloadKeepsQueued(madeBefore28: Bool) throws {
        let gate = try FifoGate()
        let marker = gate.directory + "/ran"
        let conninfo = try Postgres.server().database()
        let a = try Daemon(config: Self.config(conninfo, host: "web-1", lease: "15s", word: "A", gate: gate, marker: marker))
        try a.waitForLog("joined the fleet")
        defer { a.stop() }
        let (first, queued, fd) = try Self.queueBehindGate(a, gate)
        if madeBefore28 {
            // As version 27 wrote it: its definition by fingerprint, no revision.
            let db = try PGConnection(conninfo)
            try db.query("""
                INSERT INTO definitions (fingerprint, name, action) SELECT r.definition, v.name, v.action FROM runs r
                JOIN revisions v ON v.revision = r.revision AND v.name = r.action WHERE r.id = $1
                """, [String(queued)])
            #expect(try db.query("UPDATE runs SET revision = NULL WHERE id = $1", [String(queued)]).affected == 1)
        }
        try Self.config(conninfo, host: "web-1", lease: "15s", word: "B", gate: gate, marker: marker)
            .write(toFile: a.configPath, atomically: true, encoding: .utf8)
        let reloaded = try a.baton("reload")
        #expect(reloaded.code == 0, "\(reloaded.stderr)")
        gate.release(fd)
        #expect(try FleetTests.wait(a, run: first)?.phase == .success)
        #expect(try FleetTests.wait(a, run: queued)?.phase == .success)
        #expect(Self.lines(marker) == ["A", "A"], "the queued run ran its own definition")
        // A run triggered now is made by the config loaded now.
        let later = try #require(try FleetTests.trigger(a, "ship").run?.id)
        #expect(try FleetTests.wait(a, run: later)?.phase == .success)
        #expect(Self.lines(marker) == ["A", "A", "B"])
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT count(*) FROM revisions").first == ["2"], "one row per definition triggered")
    }

    @Test("a run queued as exec A on web-1 still runs A after web-1 reloads a config without the action, as one machine's queued run does")
    func reloadRemovingActionFinishes() throws {
        let gate = try FifoGate()
        let marker = gate.directory + "/ran"
        let conninfo = try Postgres.server().database()
        let a = try Daemon(config: Self.config(conninfo, host: "web-1", lease: "15s", word: "A", gate: gate, marker: marker))
        try a.waitForLog("joined the fleet")
        defer { a.stop() }
        let (first, queued, fd) = try Self.queueBehindGate(a, gate)
        try #"{ postgres: "\#(conninfo)", host: "web-1", lease: "15s", requireUser: false, actions: { other: { exec: ["true"] } } }"#
            .write(toFile: a.configPath, atomically: true, encoding: .utf8)
        let reloaded = try a.baton("reload")
        #expect(reloaded.code == 0, "\(reloaded.stderr)")
        gate.release(fd)
        #expect(try FleetTests.wait(a, run: first)?.phase == .success)
        let ended = try #require(try FleetTests.wait(a, run: queued))
        #expect(ended.phase == .success, "\(ended)")
        #expect(Self.lines(marker) == ["A", "A"])
    }

    /// web-1 (exec A) is killed with a run queued behind its gated run; web-2 (exec `word`, with
    /// `extra`) ends the gated one `host_lost` and takes the queued one over: its end, the marker's lines.
    static func takenOver(word: String, extra: String = "") throws -> (RunSnapshot, [String], Daemon) {
        let gate = try FifoGate()
        let marker = gate.directory + "/ran"
        let conninfo = try Postgres.server().database()
        let a = try Daemon(config: Self.config(conninfo, host: "web-1", lease: "2s", word: "A", gate: gate, marker: marker))
        try a.waitForLog("joined the fleet")
        let b = try Daemon(config: Self.config(conninfo, host: "web-2", lease: "20s", word: word, gate: gate, marker: marker, extra: extra))
        try b.waitForLog("joined the fleet")
        let (first, queued, fd) = try Self.queueBehindGate(a, gate)
        a.crash()
        // web-1's guard kills its run at the lease's deadline; web-2 ends it host_lost and takes the queued one over.
        #expect(try FleetTests.wait(b, run: first)?.reason == "host_lost")
        close(fd)
        return (try #require(try FleetTests.wait(b, run: queued)), Self.lines(marker), b)
    }

    @Test("web-1 (exec A) is killed with a run queued behind its gated run; web-2 (exec B) takes it over and ends it, reason definition: it runs neither A, which its config never gave, nor B")
    func takeoverRefusesOtherDefinition() throws {
        let (ended, lines, b) = try Self.takenOver(word: "B")
        defer { b.stop() }
        #expect(ended.phase == .failure && ended.reason == "definition" && ended.error?.contains("not one web-2 configured") == true, "\(ended)")
        #expect(lines == ["A"], "web-2 ran neither the queued run's definition nor its own config's")
    }

    @Test("web-1 and web-2 differ only where the fingerprint does not look (output.keep): web-2 takes web-1's queued run over and runs it, with its own settings, as before runs kept their whole definition (fleet version 28)")
    func takeoverRunsSameFingerprint() throws {
        let (ended, lines, b) = try Self.takenOver(word: "A", extra: #"output: { keep: "1MiB" }"#)
        defer { b.stop() }
        #expect(ended.phase == .success, "\(ended)")
        #expect(lines == ["A", "A"])
        let conninfo = try #require(try String(contentsOfFile: b.configPath, encoding: .utf8).firstMatch(of: /postgres: "([^"]*)"/).map { String($0.1) })
        let revisions = try PGConnection(conninfo).query("SELECT count(DISTINCT revision), count(DISTINCT definition) FROM runs").first
        #expect(revisions == ["1", "1"], "both runs web-1's (web-2 triggered none): \(String(describing: revisions))")
    }

    @Test("a retrying run of web-1 (exec A) moved to web-2 (exec B) when web-1 is killed ends there, reason definition, with no other attempt")
    func movedRetryingRefusesOtherDefinition() throws {
        let gate = try FifoGate()
        let marker = gate.directory + "/ran"
        let conninfo = try Postgres.server().database()
        func config(_ host: String, _ lease: String, _ word: String) -> String {
            """
            { postgres: "\(conninfo)", host: "\(host)", lease: "\(lease)", requireUser: false, actions: {
                tries: { exec: ["sh", "-c", "echo \(word) >> \(marker); exit 1"], retry: { attempts: 1, backoff: "2s" } } } }
            """
        }
        let a = try Daemon(config: config("web-1", "2s", "A"))
        try a.waitForLog("joined the fleet")
        let b = try Daemon(config: config("web-2", "20s", "B"))
        try b.waitForLog("joined the fleet")
        defer { b.stop() }
        let id = try #require(try FleetTests.trigger(a, "tries").run?.id)
        let db = try PGConnection(conninfo)
        guard try Eventually.until("run \(id) retrying", {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND phase = 'retrying'", [String(id)]).first != nil
        }) else { return }
        a.crash()
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .failure && ended.reason == "definition" && ended.attempts == 1, "\(ended)")
        #expect(Self.lines(marker) == ["A"], "no second attempt ran, neither A on web-2 nor web-2's B")
    }

    @Test("deploy approve.by ann on web-1 where triggered, ben on web-2: ben's approval is refused on either host, ann's is taken on web-2")
    func approvalByOwnDefinition() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let team = try ApprovalEndToEndTests.Team()
        let marker = NSTemporaryDirectory() + "baton-fleet-definition-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let conninfo = try Postgres.server().database()
        let hosts = try [("web-1", team.ann), ("web-2", team.ben)].map { name, approver in
            let host = try Daemon(config: """
                { postgres: "\(conninfo)", host: "\(name)", lease: "15s", requireUser: false, socketMode: "0666",
                  allow: { trigger: { users: ["*"] } }, actions: {
                    deploy: { exec: ["sh", "-c", "echo ran >> \(marker)"], approve: { by: ["user:\(approver)"], timeout: "1h" } } } }
                """)
            try host.waitForLog("joined the fleet")
            chmod(host.directory, 0o755)
            return host
        }
        defer { for host in hosts { host.stop() } }
        let run = try ApprovalEndToEndTests.runID(try hosts[0].baton("run", "deploy", "--detach", "--json"))
        #expect(try team.baton(team.ben, hosts[1], "approvals").stdout == "nothing waits for your approval\n")
        let listed = try team.baton(team.ann, hosts[1], "approvals").stdout
        #expect(listed.contains("run \(run)  deploy"), "\(listed)")
        for host in hosts {
            let refused = try team.baton(team.ben, host, "approve", run)
            #expect(refused.code == 77 && refused.stderr.contains("approvals are by user:\(team.ann)"), "exit \(refused.code): \(refused.stderr)")
        }
        let approved = try team.baton(team.ann, hosts[1], "approve", run)
        #expect(approved.code == 0, "\(approved.stderr)")
        #expect(try FleetTests.wait(hosts[0], run: Int64(run)!)?.phase == .success)
        #expect(FleetApprovalTests.lines(marker) == ["ran"])
    }
}
