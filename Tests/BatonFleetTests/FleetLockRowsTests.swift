import BatonCore
@testable import BatonFleet
import Testing

/// How a start's transaction decides from the rows it reads under the lock rows
/// (`FleetLocks.decide`): the engine's `LockBook` rebuilt from the runs that hold (loading,
/// retrying) and the line (queued, by `lock_wait`), the same rule as one machine.
@Suite("FleetLocks: a start against the lock rows")
struct FleetLockRowsTests {
    typealias Row = FleetLocks.Row

    static func holder(_ run: Int64, _ action: String, _ locks: [String], phase: Phase = .loading) -> Row {
        Row(run: run, action: action, phase: phase, locks: locks, place: nil)
    }

    static func waiter(_ run: Int64, _ action: String, _ locks: [String], place: Int64) -> Row {
        Row(run: run, action: action, phase: .queued, locks: locks, place: place)
    }

    static let limits = ["db": 1, "heavy-io": 2]

    static func decide(_ run: Int64, _ action: String, _ locks: [String], _ rows: [Row]) -> String? {
        FleetLocks.decide(run, action: action, claims: locks.map { LockClaim($0, limit: limits[$0] ?? 1) }, rows: rows, limits: limits)?.text
    }

    @Test("a run takes its locks when each has room beyond its holders and the older runs in line that want it", arguments: [
        // Nothing held: it takes them.
        (Int64(9), "backup", ["db", "heavy-io"], [Row](), String?.none),
        // A holder of db, loading or retrying: it waits, naming it.
        (9, "backup", ["db"], [holder(3, "migrate", ["db"])], "waiting for lock db, held by migrate run 3"),
        (9, "backup", ["db"], [holder(3, "migrate", ["db"], phase: .retrying)], "waiting for lock db, held by migrate run 3"),
        // A queued run out of line (it never waited) holds nothing and reserves nothing.
        (9, "backup", ["db"], [holder(3, "migrate", ["db"], phase: .queued)], nil),
        // heavy-io is 2 at once: one holder leaves room, two fill it.
        (9, "scan", ["heavy-io"], [holder(3, "index", ["heavy-io"])], nil),
        (9, "scan", ["heavy-io"], [holder(3, "index", ["heavy-io"]), holder(4, "backup", ["db", "heavy-io"])],
         "waiting for lock heavy-io (2 at once), held by index run 3, backup run 4"),
        // An older run in line reserves its place in each of its locks, free or not (FIFO: none starves).
        (9, "migrate", ["db"], [waiter(5, "backup", ["db", "heavy-io"], place: 1)], "waiting for lock db, behind backup run 5"),
        (9, "scan", ["heavy-io"], [holder(3, "index", ["heavy-io"]), waiter(5, "backup", ["db", "heavy-io"], place: 1)],
         "waiting for lock heavy-io (2 at once), held by index run 3, behind backup run 5"),
        // A run already in line keeps its place: a younger waiter does not hold it back.
        (5, "backup", ["db"], [waiter(5, "backup", ["db"], place: 1), waiter(7, "migrate", ["db"], place: 2)], nil),
        (7, "migrate", ["db"], [waiter(5, "backup", ["db"], place: 1), waiter(7, "migrate", ["db"], place: 2)],
         "waiting for lock db, behind backup run 5"),
        // Line order is the place, not the run id.
        (5, "backup", ["db"], [waiter(5, "backup", ["db"], place: 4), waiter(7, "migrate", ["db"], place: 2)],
         "waiting for lock db, behind migrate run 7"),
        // Locks it does not claim are not its business.
        (9, "scan", ["heavy-io"], [holder(3, "migrate", ["db"]), waiter(5, "backup", ["db"], place: 1)], nil),
    ] as [(Int64, String, [String], [Row], String?)])
    func decide(run: Int64, action: String, locks: [String], rows: [Row], expected: String?) {
        #expect(Self.decide(run, action, locks, rows) == expected)
    }

    @Test("all at once or none: a run whose second lock is full takes neither, and the younger run wanting its free one waits behind it")
    func allAtOnce() {
        let rows = [Self.holder(3, "scan", ["heavy-io"]), Self.holder(4, "index", ["heavy-io"]), Self.waiter(5, "backup", ["db", "heavy-io"], place: 1)]
        #expect(Self.decide(5, "backup", ["db", "heavy-io"], rows) == "waiting for lock heavy-io (2 at once), held by scan run 3, index run 4")
        #expect(Self.decide(9, "migrate", ["db"], rows) == "waiting for lock db, behind backup run 5")
    }

    @Test("random books: for every run in line, the fleet's decision from the rows is the one machine's admit pass (take, in line order)",
          arguments: 0..<200)
    func sameAsOneMachine(seed: Int) {
        var random = SplitMix(seed: UInt64(seed))
        let names = ["a", "b", "c"]
        let limits = ["a": 1, "b": 2, "c": 3]
        func claims() -> [LockClaim] {
            let chosen = names.filter { _ in random.next() % 2 == 0 }
            return (chosen.isEmpty ? [names[Int(random.next() % 3)]] : chosen).map { LockClaim($0, limit: limits[$0]!) }
        }
        // One machine: holders that took their locks, then a line of waiters taken in order in one pass.
        var machine = LockBook()
        var rows: [Row] = []
        var reserved: [String: Int] = [:]
        for run in Int64(1)...Int64(1 + random.next() % 5) {
            let locks = claims()
            machine.register(run, action: "h", locks: locks)
            var none: [String: Int] = [:]
            if machine.take(run, reserved: &none) { rows.append(Self.holder(run, "h", locks.map(\.name))) } else { machine.release(run) }
        }
        let line = (0..<Int(1 + random.next() % 6)).map { Int64(100 + $0) }
        var taken: [Int64: Bool] = [:]
        for (place, run) in line.enumerated() {
            let locks = claims()
            machine.register(run, action: "w", locks: locks)
            rows.append(Self.waiter(run, "w", locks.map(\.name), place: Int64(place)))
        }
        for run in line { taken[run] = machine.take(run, reserved: &reserved) }
        for row in rows where row.place != nil {
            let fleet = FleetLocks.decide(row.run, action: "w", claims: row.locks.map { LockClaim($0, limit: limits[$0]!) }, rows: rows, limits: limits)
            #expect((fleet == nil) == taken[row.run], "seed \(seed): run \(row.run) \(row.locks) in \(rows)")
        }
    }

    @Test("what each run in line waits for (for status on any host); one whose locks are free now is not listed")
    func waits() {
        let rows = [Self.holder(3, "migrate", ["db"]), Self.waiter(5, "backup", ["db"], place: 1), Self.waiter(6, "scan", ["heavy-io"], place: 2),
                    Self.waiter(7, "migrate", ["db"], place: 3)]
        let waits = FleetLocks.waits(rows, limits: Self.limits)
        #expect(waits.mapValues(\.text) == [5: "waiting for lock db, held by migrate run 3", 7: "waiting for lock db, held by migrate run 3"])
    }

    @Test("live's rows, one per run and lock, become one row per run with its locks in order")
    func rows() {
        let rows = FleetLocks.rows([["5", "backup", "queued", "1", "db"], ["5", "backup", "queued", "1", "heavy-io"],
                                    ["3", "migrate", "loading", nil, "db"], [nil, nil, nil, nil, nil]])
        #expect(rows == [Self.waiter(5, "backup", ["db", "heavy-io"], place: 1), Self.holder(3, "migrate", ["db"])])
    }

    @Test("lock rows are given and locked in name order, each once, whatever order the action names them in")
    func lockOrder() {
        let statements = FleetLocks.lockRows(["io", "db", "io"])
        #expect(statements.map(\.parameters) == [[#"{"db","io"}"#], [#"{"db","io"}"#]])
        #expect(statements[1].sql.contains("ORDER BY name FOR UPDATE"))
    }
}
