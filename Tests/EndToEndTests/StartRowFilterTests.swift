import BatonCore
@testable import BatonFleet
import Testing

/// The looks' WHERE (`StartColumns.filter`) is a pre-filter of the rule, not a rule of its own.
/// The cases are the start rule's own facts (`KeyDecision.StartView`), each value written as
/// PostgreSQL keeps it; what each case expects is the rule's verdict on the view it states
/// (`KeyDecision.mayStart`), never a hand-written yes or no. On those rows: the start rows read
/// back (`StartColumns`) give exactly the stated views, and the filter keeps exactly the runs the
/// rule starts. A fact the view gains with no row here fails `everyFactCovered`.
@Suite("End to end: the start rows' filter keeps exactly what KeyDecision.mayStart starts", .offPool)
struct StartRowFilterTests {
    typealias View = KeyDecision.StartView
    static let me = FleetArtifactRowsTests.me
    static let hour: Int64 = 3_600_000_000

    /// One value of one fact: `sql` gives it to run `id` (of action `a<id>` on key `k<id>`,
    /// queued, its key's holder, nothing else: `base`), `now` being the database's clock; `view`
    /// states it in the rule's terms.
    struct Fact: Sendable {
        var name: String
        var sql: @Sendable (_ id: Int64, _ now: Int64) -> String = { _, _ in "" }
        var view: @Sendable (inout View) -> Void = { _ in }
    }

    static func base(_ id: Int64) -> View { View(run: id, slot: KeySlot(holder: id)) }

    /// How a fleet's row keeps each of the rule's values of `needs` (`FleetNeeds`): exhaustive, so a
    /// value the rule gains must be given its rows here.
    static func stored(_ needs: View.Needs) -> [String?] {
        switch needs {
        case .met: [nil, "met"]
        case .waiting: ["asking", "waiting"]
        case .failed: ["failed"]
        }
    }

    static let facts: [Fact] = {
        var facts = [Fact(name: "nothing else")]
        for phase in Phase.allCases where phase != .queued {
            facts.append(Fact(name: "phase \(phase)", sql: { id, _ in "UPDATE runs SET phase = '\(phase.rawValue)' WHERE id = \(id)" },
                              view: { $0.phase = phase }))
        }
        facts += [
            Fact(name: "another run holds the key", sql: { id, _ in
                """
                INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES (\(id + 1000), 'a\(id)', 'k\(id)', 'queued', 'queue', 0, 'web-1', '\(me.incarnation)');
                UPDATE keys SET holder = \(id + 1000), follow_up = \(id) WHERE key = 'k\(id)'
                """
            }, view: { $0.slot = KeySlot(holder: $0.run + 1000, line: [$0.run]) }),
            Fact(name: "a replaced run drains", sql: { id, _ in "UPDATE keys SET draining = '{999}' WHERE key = 'k\(id)'" },
                 view: { $0.slot = KeySlot(holder: $0.run, draining: [999]) }),
            Fact(name: "its window open", sql: { id, now in "UPDATE runs SET debounce_until = \(now + hour) WHERE id = \(id)" },
                 view: { $0.windowPassed = false }),
            Fact(name: "its window passed", sql: { id, now in "UPDATE runs SET debounce_until = \(now - hour) WHERE id = \(id)" }),
            Fact(name: "a pause until resumed", sql: { id, now in pause(id, at: now, until: nil) }, view: { $0.paused = true }),
            Fact(name: "a pause whose end is to come", sql: { id, now in pause(id, at: now, until: now + hour) }, view: { $0.paused = true }),
            Fact(name: "a pause whose end passed", sql: { id, now in pause(id, at: now - hour, until: now - 1) }),
            Fact(name: "a held pause (--hold)", sql: { id, now in pause(id, at: now, until: nil) + "; UPDATE pauses SET hold = true WHERE action = 'a\(id)'" },
                 view: { $0.paused = true }),
            Fact(name: "a rate hold to come", sql: { id, now in "UPDATE runs SET rate_until = \(now + hour) WHERE id = \(id)" },
                 view: { $0.rateHeld = true }),
            Fact(name: "a rate hold passed", sql: { id, now in "UPDATE runs SET rate_until = \(now - hour) WHERE id = \(id)" }),
            Fact(name: "an approval undecided", sql: { id, _ in approval(id, verdict: nil) }, view: { $0.approving = true }),
        ]
        for verdict in ["approved", "denied", "timed_out", "waived"] {
            facts.append(Fact(name: "an approval \(verdict)", sql: { id, _ in approval(id, verdict: verdict) }))
        }
        for needs in [View.Needs.met, .waiting, .failed] {
            for case let value? in stored(needs) {
                facts.append(Fact(name: "needs \(value)", sql: { id, _ in "UPDATE runs SET needs = '\(value)' WHERE id = \(id)" },
                                  view: { $0.needs = needs }))
            }
        }
        return facts
    }()

    static func pause(_ id: Int64, at: Int64, until: Int64?) -> String {
        "INSERT INTO pauses (action, paused_by, reason, at, until) VALUES ('a\(id)', 'alice', 'db', \(at), \(until.map(String.init) ?? "NULL"))"
    }

    static func approval(_ id: Int64, verdict: String?) -> String {
        "INSERT INTO approvals (run_id, action, approvers, verdict) VALUES (\(id), 'a\(id)', 'alice', \(verdict.map { "'\($0)'" } ?? "NULL"))"
    }

    @Test("every fact of the start rule's view has a row here that gives it another value than the base's")
    func everyFactCovered() {
        let base = Self.base(1)
        for child in Mirror(reflecting: base).children where child.label != "run" {
            let label = child.label ?? "?"
            let varied = Self.facts.contains { fact in
                var view = base
                fact.view(&view)
                let value = Mirror(reflecting: view).children.first { $0.label == label }?.value
                return value.map { String(describing: $0) } != String(describing: child.value)
            }
            #expect(varied, "no fact of the table gives the view's \(label) another value: add its rows")
        }
    }

    @Test("on each fact's rows, the rows read back are the views stated, and the filter keeps exactly the runs the rule starts")
    func filterEqualsRule() throws {
        let (_, db) = try FleetArtifactRowsTests.database()
        // Its runs 1 and 2 are not this test's.
        try db.execute("DELETE FROM runs; DELETE FROM keys")
        let now = try FleetDebounceTests.databaseNow(db)
        var stated: [Int64: (name: String, view: View)] = [:]
        for (index, fact) in Self.facts.enumerated() {
            let id = Int64(index + 1)
            try db.query("INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES ($1, $2, $3, 'queued', 'queue', 0, 'web-1', $4)",
                         [String(id), "a\(id)", "k\(id)", Self.me.incarnation])
            try db.query("INSERT INTO keys (key, holder, draining) VALUES ($1, $2, '{}')", ["k\(id)", String(id)])
            let sql = fact.sql(id, now)
            if !sql.isEmpty { try db.execute(sql) }
            var view = Self.base(id)
            fact.view(&view)
            stated[id] = (fact.name, view)
        }
        let ids = stated.keys.sorted()
        let me = Self.me.incarnation
        let read = FleetCoordinator.startable(ids)
        let decoded = try db.query(read.0, read.1).rows.map { try StartColumns.decode($0) }
        #expect(decoded.count == ids.count)
        for row in decoded {
            #expect(row.facts.view(me: me) == stated[row.run.id]?.view, "\(stated[row.run.id]?.name ?? "?"): the row read back is the view stated")
        }
        let starts = Set(ids.filter { KeyDecision.mayStart(stated[$0]!.view) == .start })
        #expect(Set(decoded.filter { $0.verdict(me: me) == .start }.map(\.run.id)) == starts, "the rule, on the rows read back")
        let filtered = try db.query("""
            SELECT r.id FROM runs r JOIN keys k ON k.key = r.key WHERE r.incarnation = $1 AND r.id = ANY ($2::bigint[]) AND \(StartColumns.filter)
            """, [me, read.1[0]]).rows.compactMap { $0[0].flatMap { Int64($0) } }
        #expect(Set(filtered) == starts, "the filter: \(Set(filtered).symmetricDifference(starts).map { stated[$0]?.name ?? "?" })")
    }
}
