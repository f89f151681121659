import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Triggers that arrive together on a host are decided in one transaction (`TriggerQueue`,
/// `TriggerBatch`): storms pipelined on three hosts decide exactly as the rules say (counted in
/// PostgreSQL), a trigger that a unique index refuses fails none of its batch-mates, and a
/// deadlock the batch meets is decided again, never answered.
@Suite("End to end: triggers decided in batches across a fleet", .serialized, .offPool)
struct FleetBatchTests {
    /// Sends `requests` on one connection at once, then reads every answer (bounded), by request order.
    static func pipelined(_ host: Daemon, _ requests: [Request]) throws -> [Response?] {
        let client = try Client(path: host.socket)
        var payload = Data()
        let encoder = JSONEncoder()
        for (index, request) in requests.enumerated() {
            var request = request
            request.id = .number(Int64(index))
            payload += try encoder.encode(request) + Data("\n".utf8)
        }
        try client.sendRaw(payload)
        var answers = [Response?](repeating: nil, count: requests.count)
        for _ in requests {
            guard let answer = try client.receive(timeout: .seconds(60)) else { break }
            if case let .number(index)? = answer.id, answers.indices.contains(Int(index)) { answers[Int(index)] = answer }
        }
        return answers
    }

    static func trigger(_ action: String, k: String? = nil, slot: Int64? = nil) -> Request {
        Request(op: .trigger, action: action, params: k.map { ["k": $0] }, detach: true, slot: slot)
    }

    static func count(_ db: PGConnection, _ sql: String, _ parameters: [String?] = []) throws -> Int {
        Int(try db.query(sql, parameters).first?[0] ?? "") ?? -1
    }

    /// Waits (bounded) until a backend waits for a lock that `pid` holds.
    @discardableResult
    static func waitBlocked(by pid: String, _ db: PGConnection) throws -> Bool {
        try Eventually.until("a backend waits for a lock that backend \(pid) holds") {
            try count(db, "SELECT count(*) FROM pg_locks WHERE NOT granted AND $1::int = ANY (pg_blocking_pids(pid))", [pid]) > 0
        }
    }

    static func pid(_ db: PGConnection) throws -> String {
        try db.query("SELECT pg_backend_pid()").first?[0] ?? ""
    }

    static let actions = """
        t: { exec: ["true"], params: { k: {} }, keyParams: ["k"] },
        s: { exec: ["true"] },
        """

    @Test("storms pipelined on three hosts, distinct keys and shared ones under reject, queue and join: exact decisions, counted in PostgreSQL, several runs made per transaction")
    func storms() throws {
        let gates = try (0..<3).map { _ in try FifoGate() }
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(3, actions: Self.actions + """
            gr: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gates[0].path)" }, policy: "reject" },
            gq: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gates[1].path)" }, policy: "queue" },
            gj: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gates[2].path)" }, policy: "join" },
            """, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let answers = Collected<(String, Response?)>()
        inParallel(3) { host in
            let requests = (0..<75).map { i in
                switch i % 5 {
                case 0, 1: Self.trigger("t", k: "\(host)-\(i)")
                case 2: Self.trigger("gr")
                case 3: Self.trigger("gq")
                default: Self.trigger("gj")
                }
            }
            let got = (try? Self.pipelined(hosts[host], requests)) ?? []
            for (request, answer) in zip(requests, got) { answers.append((request.action ?? "", answer)) }
        }
        let all = answers.all
        #expect(all.count == 225 && all.allSatisfy { $0.1 != nil }, "every trigger answered")
        func decisions(_ action: String) -> [String] {
            all.filter { $0.0 == action }.map { $0.1?.decision?.rawValue ?? $0.1?.error?.code.rawValue ?? "none" }.sorted()
        }
        #expect(decisions("t") == Array(repeating: "created", count: 90))
        #expect(decisions("gr") == ["busy"] + Array(repeating: "busy", count: 43) + ["created"])
        #expect(decisions("gq") == Array(repeating: "coalesced", count: 43) + ["created", "followUp"].sorted())
        #expect(decisions("gj") == ["created"] + Array(repeating: "joined", count: 44))
        // The same in PostgreSQL, whichever host decided what.
        for (action, runs) in [("t", 90), ("gr", 1), ("gq", 2), ("gj", 1)] {
            #expect(try Self.count(db, "SELECT count(*) FROM runs WHERE action = $1", [action]) == runs, "\(action)")
        }
        #expect(try Self.count(db, "SELECT count(*) FROM triggers WHERE action = 'gr' AND decision = 'rejected'") == 44)
        #expect(try Self.count(db, "SELECT count(*) FROM triggers WHERE action = 'gq' AND decision = 'coalesced'") == 43)
        #expect(try Self.count(db, "SELECT count(*) FROM triggers WHERE action = 'gj' AND decision = 'joined'") == 44)
        #expect(try Self.count(db, "SELECT count(DISTINCT host) FROM triggers") == 3)
        // Batches: transactions that made more than one run (each run's `queued` carries its transaction's id).
        let batched = try Self.count(db, "SELECT count(*) FROM (SELECT xid FROM transitions WHERE to_phase = 'queued' GROUP BY xid HAVING count(*) > 1) b")
        #expect(batched > 0, "some transaction made several runs")
        for run in all.filter({ $0.0 == "t" }).compactMap({ $0.1?.run?.id }) {
            #expect(try FleetTests.wait(hosts[0], run: run)?.phase == .success)
        }
        gates[0].release()
        gates[2].release()
        // The queue key's two runs, one after the other (a gate is released once its reader is gone).
        let queued = all.filter { $0.0 == "gq" && ($0.1?.decision == .created || $0.1?.decision == .followUp) }
            .compactMap { $0.1?.run?.id }.sorted()
        for run in queued {
            gates[1].release()
            #expect(try FleetTests.wait(hosts[0], run: run)?.phase == .success)
        }
        for host in hosts { host.stop() }
    }

    @Test("a batch whose insert a unique index refuses (a slot another transaction recorded first) answers its other triggers; the refused one finds that run")
    func uniqueViolationAlone() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(1, actions: Self.actions, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let warm = try #require(try Self.pipelined(hosts[0], [Self.trigger("t", k: "warm")]).first??.run)
        let blocked = warm.key.replacingOccurrences(of: "warm", with: "block")
        // The first batch waits for a key row another transaction holds, so the others queue up behind it.
        let holder = try PGConnection(conninfo), ghost = try PGConnection(conninfo)
        try holder.query("INSERT INTO keys (key) VALUES ($1) ON CONFLICT DO NOTHING", [blocked])
        try holder.execute("BEGIN")
        try holder.query("SELECT key FROM keys WHERE key = $1 FOR UPDATE", [blocked])
        // A run of the slot, not yet committed: the batch's read does not see it, its insert waits for it and then fails.
        let slot: Int64 = 1_764_558_000_000_000
        try ghost.execute("BEGIN")
        try ghost.query("""
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation, slot, ended_at)
            VALUES (2000000, 's', 's', 'success', 'reject', 0, 'ghost', 'ghost/1/0', $1, 1)
            """, [String(slot)])
        let requests = [Self.trigger("t", k: "block")] + (1...5).map { Self.trigger("t", k: "a\($0)") } + [Self.trigger("s", slot: slot)]
            + (6...10).map { Self.trigger("t", k: "a\($0)") }
        let answering = Collected<[Response?]>()
        let caller = Thread { answering.append((try? Self.pipelined(hosts[0], requests)) ?? []) }
        caller.start()
        try Self.waitBlocked(by: try Self.pid(holder), db)
        try holder.execute("COMMIT")
        // The batch with the slot's trigger waits for the ghost's insert.
        try Self.waitBlocked(by: try Self.pid(ghost), db)
        try ghost.execute("COMMIT")
        Eventually.until("the batch answered: \(hosts[0].stderr.suffix(3000))", within: 60) { !answering.all.isEmpty }
        let answers = try #require(answering.all.first)
        #expect(answers.count == requests.count)
        for (request, answer) in zip(requests, answers) where request.action == "t" {
            #expect(answer?.decision == .created, "\(request.params ?? [:]): \(answer?.error?.message ?? "-")")
        }
        let slotted = answers[6]
        #expect(slotted?.decision == .slotRan && slotted?.run?.id == 2_000_000, "\(slotted?.error?.message ?? "-")")
        #expect(try Self.count(db, "SELECT count(*) FROM runs WHERE action = 't'") == 12)
        #expect(try Self.count(db, "SELECT count(*) FROM runs WHERE action = 's'") == 1)
        hosts[0].stop()
    }

    @Test("a deadlock a batch meets (another transaction locking its keys in the other order) is decided again: every caller gets its run")
    func deadlockRetried() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: Self.actions, conninfo: conninfo)
        let db = try PGConnection(conninfo)
        let warm = try #require(try Self.pipelined(hosts[1], [Self.trigger("t", k: "warm")]).first??.run)
        var deadlocked = false, rounds = 0
        // A round may find its two triggers in two batches (the first commits before the other
        // transaction asks for its key): no deadlock then; the rounds go on until one deadlocks.
        for round in 0..<10 where !deadlocked {
            rounds += 1
            let (a, b) = ("a\(round)", "b\(round)")
            let (keyA, keyB) = (warm.key.replacingOccurrences(of: "warm", with: a), warm.key.replacingOccurrences(of: "warm", with: b))
            let other = try PGConnection(conninfo)
            try other.query("INSERT INTO keys (key) VALUES ($1), ($2) ON CONFLICT DO NOTHING", [keyA, keyB])
            try other.execute("BEGIN")
            // The batch is the one whose deadlock check runs first, so the one that gives way.
            try other.execute("SET LOCAL deadlock_timeout = '60s'")
            try other.query("SELECT key FROM keys WHERE key = $1 FOR UPDATE", [keyB])
            let answering = Collected<[Response?]>()
            let caller = Thread { answering.append((try? Self.pipelined(hosts[round % 2], [Self.trigger("t", k: a), Self.trigger("t", k: b)])) ?? []) }
            caller.start()
            try Self.waitBlocked(by: try Self.pid(other), db)
            try other.query("SELECT key FROM keys WHERE key = $1 FOR UPDATE", [keyA])
            try other.execute("COMMIT")
            Eventually.until("the batch answered", within: 60) { !answering.all.isEmpty }
            let answers = answering.all.first ?? []
            #expect(answers.count == 2 && answers.allSatisfy { $0?.decision == .created },
                    "\(answers.map { $0?.error?.message ?? $0?.decision?.rawValue ?? "none" })")
            deadlocked = hosts[round % 2].stderr.contains("met a deadlock or serialization failure (40P01)")
        }
        #expect(deadlocked, "a batch met a deadlock in one of the rounds")
        #expect(try Self.count(db, "SELECT count(*) FROM runs WHERE action = 't'") == 1 + 2 * rounds)
        for host in hosts { host.stop() }
    }
}
