import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Audit D2 b-d: a fleet host's restart in place, and another host's takeover of a host that is
/// gone, decide each unfinished run as one machine's restart does (`RecoveryDecision`): a
/// debounced run waits out a window from the recovery; a run a replace was stopping ends as the
/// replace said and its replacement starts once; a run that would start (again) without its
/// secret param's value ends `failure`, reason `secret`, at the recovery.
@Suite("End to end: a fleet host's recovery decided as one machine's", .serialized, .offPool)
struct FleetRecoveryTests {
    enum Path: String, CaseIterable, CustomTestStringConvertible {
        /// web-1 killed and started again in place, within its lease: its new start takes its runs over.
        case restart
        /// web-1 killed and not back: web-2 takes its runs over once its lease ran out.
        case takeover
        var testDescription: String { rawValue }
    }

    /// Each action appends a line to `$DIR/NAME` when it starts; the gated ones then wait for `$DIR/go`,
    /// ignoring SIGTERM (a replace's stop is still draining when web-1 dies).
    /// `swapInterrupt`: what `swap`'s `onInterrupt` says on this host (the run's definition decides a takeover).
    static func config(_ conninfo: String, host: String, lease: String, scratch: String, swapInterrupt: String = "restart") -> String {
        let gated = #"echo start $BATON_RUN_ID >> \"$DIR/$BATON_ACTION\"; trap '' TERM; while [ ! -e \"$DIR/go\" ]; do sleep 0.02; done"#
        let common = #"env: { DIR: "\#(scratch)" }, survivesRestart: false"#
        return """
            { postgres: "\(conninfo)", host: "\(host)", lease: "\(lease)", requireUser: false, secretsKey: "\(scratch)/secrets.key",
              actions: { quiet: { exec: ["sh", "-c", "\(gated)"], \(common), debounce: "6s", maxWait: "60s", policy: "queue" },
                         swap: { exec: ["sh", "-c", "\(gated)"], \(common), policy: "replace", onInterrupt: "\(swapInterrupt)", killGrace: "60s" },
                         vault: { exec: ["sh", "-c", "\(gated)"], \(common), params: { token: { secret: true } }, policy: "queue", killGrace: "100ms" },
                         rerun: { exec: ["sh", "-c", "\(gated)"], \(common), params: { token: { secret: true } }, onInterrupt: "restart", killGrace: "100ms" } } }
            """
    }

    /// web-1 and web-2 (web-1's lease short on the takeover path) on a fresh database, and a scratch directory with a secrets key.
    static func fleet(_ path: Path) throws -> (a: Daemon, b: Daemon, db: PGConnection, conninfo: String, scratch: String) {
        try fleet(leases: (path == .takeover ? "2s" : "20s", "20s"))
    }

    /// web-1 and web-2 with these leases (and web-2's `swap` saying `swapInterrupt`), each joined, on a fresh
    /// database; a scratch directory with a secrets key (`clean` removes it).
    static func fleet(leases: (String, String), swapInterrupt: String = "restart") throws
        -> (a: Daemon, b: Daemon, db: PGConnection, conninfo: String, scratch: String) {
        let scratch = NSTemporaryDirectory() + "baton-fleet-recovery-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: scratch + "/secrets.key", contents: Data((0..<32).map { _ in UInt8.random(in: 0...255) }),
                                               attributes: [.posixPermissions: 0o600]))
        let conninfo = try Postgres.server().database()
        let a = try Daemon(config: config(conninfo, host: "web-1", lease: leases.0, scratch: scratch))
        try a.waitForLog("joined the fleet")
        let b = try Daemon(config: config(conninfo, host: "web-2", lease: leases.1, scratch: scratch, swapInterrupt: swapInterrupt))
        try b.waitForLog("joined the fleet")
        return (a, b, try PGConnection(conninfo), conninfo, scratch)
    }

    /// The database's clock in microseconds (`FleetCooldown.databaseNow`).
    static let databaseNow = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

    /// Kills web-1 (again: a crash of a process gone is nothing); on the restart path starts it again (returned, to be stopped), else web-2 reaps it.
    static func lose(_ a: Daemon, _ path: Path, conninfo: String, scratch: String) throws -> Daemon? {
        a.crash()
        guard path == .restart else { return nil }
        let back = try Daemon(config: config(conninfo, host: "web-1", lease: "20s", scratch: scratch), reusing: a)
        try back.waitForLog("joined the fleet")
        return back
    }

    /// Lets every run still waiting go, then removes the scratch directory.
    static func clean(_ scratch: String) {
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        try? FileManager.default.removeItem(atPath: scratch)
    }

    static func trigger(_ host: Daemon, _ action: String, token: String? = nil) throws -> Int64 {
        let response = try Client(path: host.socket).call(Request(op: .trigger, action: action, params: token.map { ["token": $0] } ?? [:], detach: true))
        return try #require(response.run?.id, "\(String(describing: response.error?.code)): \(response.error?.message ?? "")")
    }

    static func phases(_ id: Int64, on db: PGConnection) throws -> [String] {
        try db.query("SELECT to_phase FROM transitions WHERE run_id = $1 ORDER BY seq", [String(id)]).rows.map { $0[0] ?? "-" }
    }

    static func starts(_ action: String, scratch: String) -> String {
        (try? String(contentsOfFile: scratch + "/" + action, encoding: .utf8)) ?? ""
    }

    static func waitStarted(_ id: Int64, _ action: String, scratch: String) throws {
        try Eventually.until("run \(id) started") { starts(action, scratch: scratch).contains("start \(id)\n") }
    }

    @Test("D2 b: a debounced run pending when its host dies starts a window after the recovery (one machine's restart), not at the window kept from before", arguments: Path.allCases)
    func debounced(_ path: Path) throws {
        let (a, b, db, conninfo, scratch) = try Self.fleet(path)
        defer { Self.clean(scratch) }
        defer { b.stop() }
        let id = try Self.trigger(a, "quiet")
        // Half its window passes with web-1 dead (web-2's reap comes 2 s or more after the kill anyway), by the
        // database's clock: the window kept from before ends 3 s before one counted from the recovery.
        a.crash()
        try Eventually.until("the database's clock 3 s into run \(id)'s window") {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND debounce_first + 3000000 <= \(Self.databaseNow)", [String(id)]).first != nil
        }
        let back = try Self.lose(a, path, conninfo: conninfo, scratch: scratch)
        defer { back?.stop() }
        try Self.waitStarted(id, "quiet", scratch: scratch)
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .success && ended.host == (path == .restart ? "web-1" : "web-2"), "\(ended)")
        // web-1's first start went gone (the database's clock) in the recovery's transaction, which gave the run its window.
        let gone = try #require(try db.query("""
            SELECT (extract(epoch FROM gone_at) * 1000000)::bigint FROM hosts WHERE name = 'web-1' AND gone_at IS NOT NULL
            """).first?[0].flatMap { Int64($0) })
        let loading = try #require(try db.query("SELECT at FROM transitions WHERE run_id = $1 AND to_phase = 'loading'", [String(id)]).first?[0]
            .flatMap { Int64($0) })
        #expect(loading >= gone + 6_000_000, "started \(Double(loading - gone) / 1e6) s after the recovery, inside its window")
        #expect(try Self.phases(id, on: db) == ["queued", "loading", "success"])
        #expect(Self.starts("quiet", scratch: scratch) == "start \(id)\n")
    }

    @Test("D2 c: a loading run of an action that restarts when interrupted, which a replace was stopping when its host died, ends replaced at the recovery; its replacement starts once", arguments: Path.allCases)
    func replacedWhileDraining(_ path: Path) throws {
        let (a, b, db, conninfo, scratch) = try Self.fleet(path)
        defer { Self.clean(scratch) }
        defer { b.stop() }
        let old = try Self.trigger(a, "swap")
        try Self.waitStarted(old, "swap", scratch: scratch)
        let new = try Self.trigger(a, "swap")
        // The replace's mark is in the rows (with the new run's creation): the old run drains, ignoring SIGTERM for 60 s.
        try Eventually.until("run \(old) marked replaced") {
            try db.query("SELECT 1 FROM runs WHERE id = $1 AND phase = 'loading' AND stop IS NOT NULL", [String(old)]).first != nil
        }
        let back = try Self.lose(a, path, conninfo: conninfo, scratch: scratch)
        defer { back?.stop() }
        let replaced = try #require(try FleetTests.wait(b, run: old))
        #expect(replaced.phase == .cancelled && replaced.reason == "replaced", "\(replaced)")
        try Self.waitStarted(new, "swap", scratch: scratch)
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        let ended = try #require(try FleetTests.wait(b, run: new))
        #expect(ended.phase == .success, "\(ended)")
        #expect(try Self.phases(old, on: db) == ["queued", "loading", "cancelled"])
        #expect(try Self.phases(new, on: db) == ["queued", "loading", "success"])
        #expect(Self.starts("swap", scratch: scratch) == "start \(old)\nstart \(new)\n")
    }

    @Test("H1: a loading run of an action that restarts when interrupted, cancelled on its own host before that host dies, ends cancelled at the recovery, not run again", arguments: Path.allCases)
    func cancelledOnItsHost(_ path: Path) throws {
        let (a, b, db, conninfo, scratch) = try Self.fleet(path)
        defer { Self.clean(scratch) }
        defer { b.stop() }
        let id = try Self.trigger(a, "swap")
        try Self.waitStarted(id, "swap", scratch: scratch)
        // Answered once the cancel is recorded: its row is marked then, the run draining (it ignores SIGTERM for 60 s).
        let answer = try Client(path: a.socket).call(Request(op: .cancel, run: id))
        #expect(answer.error == nil, "\(answer.error?.message ?? "")")
        let mark = try db.query("SELECT phase || ' ' || coalesce(stop, '-') FROM runs WHERE id = $1", [String(id)]).first?[0] ?? nil
        #expect(mark == "loading cancelled \(getuid())", "run \(id)'s cancel not marked when answered")
        let back = try Self.lose(a, path, conninfo: conninfo, scratch: scratch)
        defer { back?.stop() }
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .cancelled && ended.reason == "cancelled", "\(ended)")
        #expect(try Self.phases(id, on: db) == ["queued", "loading", "cancelled"])
        #expect(Self.starts("swap", scratch: scratch) == "start \(id)\n")
    }

    @Test("M2: a takeover decides by the run's definition, not by the taking host's config: a run of an action that restarts when interrupted on the host that made it restarts on a host whose config says fail")
    func takeoverByDefinition() throws {
        let (a, b, db, _, scratch) = try Self.fleet(leases: ("2s", "20s"), swapInterrupt: "fail")
        defer { Self.clean(scratch) }
        defer { b.stop() }
        let id = try Self.trigger(a, "swap")
        try Self.waitStarted(id, "swap", scratch: scratch)
        a.crash()
        // Taken over by web-2 once web-1's lease ran out: queued again there, as its definition says, and run again.
        try Eventually.until("run \(id) started again on web-2", within: 60) { Self.starts("swap", scratch: scratch) == "start \(id)\nstart \(id)\n" }
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        let ended = try #require(try FleetTests.wait(b, run: id))
        #expect(ended.phase == .success && ended.host == "web-2", "\(ended)")
        #expect(try Self.phases(id, on: db) == ["queued", "loading", "queued", "loading", "success"])
    }

    @Test("D2 c, one machine: a loading run of an action that restarts when interrupted, which a replace was stopping when batond crashed, ends replaced at the restart, not run again; its replacement starts once")
    func replacedWhileDrainingOneMachine() throws {
        let scratch = NSTemporaryDirectory() + "baton-recovery-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { Self.clean(scratch) }
        let gated = #"echo start $BATON_RUN_ID >> \"$DIR/$BATON_ACTION\"; trap '' TERM; while [ ! -e \"$DIR/go\" ]; do sleep 0.02; done"#
        let config = """
            { requireUser: false, actions: { swap: { exec: ["sh", "-c", "\(gated)"], env: { DIR: "\(scratch)" }, survivesRestart: false,
                                                   policy: "replace", onInterrupt: "restart", killGrace: "60s" } } }
            """
        let daemon = try Daemon(config: config)
        let old = try Self.trigger(daemon, "swap")
        try Self.waitStarted(old, "swap", scratch: scratch)
        // Answered once its creation is durable: its queued transition names the run it replaces, which drains, ignoring SIGTERM.
        let new = try Self.trigger(daemon, "swap")
        daemon.crash()
        let restarted = try Daemon(config: config, reusing: daemon, name: "restarted")
        defer { restarted.stop() }
        // Started again, the old run would wait for the file below: one start of either after the first is the answer.
        try Eventually.until("a run started after the restart") { Self.starts("swap", scratch: scratch).split(separator: "\n").count == 2 }
        #expect(Self.starts("swap", scratch: scratch) == "start \(old)\nstart \(new)\n")
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        let replaced = try #require(try FleetTests.wait(restarted, run: old))
        #expect(replaced.phase == .cancelled && replaced.reason == "replaced" && replaced.error == "replaced by run \(new)", "\(replaced)")
        let ended = try #require(try FleetTests.wait(restarted, run: new))
        #expect(ended.phase == .success, "\(ended)")
        #expect(Self.starts("swap", scratch: scratch) == "start \(old)\nstart \(new)\n")
    }

    @Test("D2 d: runs of actions with a secret param end failure, reason secret, at the recovery where they would start (again): the queued one never starts, the one that restarts when interrupted does not start again", arguments: Path.allCases)
    func secrets(_ path: Path) throws {
        let (a, b, db, conninfo, scratch) = try Self.fleet(path)
        defer { Self.clean(scratch) }
        defer { b.stop() }
        let holder = try Self.trigger(a, "vault", token: "token-1")
        let queued = try Self.trigger(a, "vault", token: "token-2")
        let rerun = try Self.trigger(a, "rerun", token: "token-3")
        try Self.waitStarted(holder, "vault", scratch: scratch)
        try Self.waitStarted(rerun, "rerun", scratch: scratch)
        let back = try Self.lose(a, path, conninfo: conninfo, scratch: scratch)
        defer { back?.stop() }
        let lost = path == .restart ? "interrupted" : "host_lost"
        for (id, expected, transitions) in [(holder, lost, ["queued", "loading", "failure"]), (queued, "secret", ["queued", "failure"]),
                                            (rerun, "secret", ["queued", "loading", "failure"])] {
            let ended = try #require(try FleetTests.wait(b, run: id))
            #expect(ended.phase == .failure && ended.reason == expected, "run \(id): \(ended)")
            #expect(try Self.phases(id, on: db) == transitions, "run \(id)")
        }
        #expect(Self.starts("vault", scratch: scratch) == "start \(holder)\n")
        #expect(Self.starts("rerun", scratch: scratch) == "start \(rerun)\n")
    }
}
