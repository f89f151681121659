@testable import BatonEngine
import Testing

/// A host's start with both a rate limit and a lock (`FlightTable.admit`: the rate hold before
/// `locks.take`, which `RateBook.admit` asks as the rest of the start): a run its rate limit
/// holds back takes no lock, and a lock waiter its rate limit then holds back leaves the lock
/// waiters; so does one its action's pause holds back (`FlightTable.hold`). From the review of
/// fleetstep2, which saw no other test with an action that has both.
@Suite("A host's holds (rate, pause) and its locks")
struct RateLockTableTests {
    static let now = Timestamp(rawValue: 100_000_000_000)
    static let claim = RateClaim(bucket: "action deploy", limit: RateLimit(runs: 1, per: .seconds(60), scope: .action, over: .delay))
    static let db = LockClaim("db")

    static func add(_ table: inout FlightTable, _ run: Int64, key: String, action: String, rate: RateClaim?) {
        table.apply(.created(run), key: key, slot: KeySlot(holder: run), action: action, locks: [db], rate: rate)
        table.markDurable(run)
    }

    @Test("a run held by its rate limit takes no lock: another action's run takes it")
    func heldTakesNoLock() {
        var table = FlightTable(limit: 4)
        table.rememberStart(Self.claim, at: Self.now + .seconds(-10))
        Self.add(&table, 1, key: "a", action: "deploy", rate: Self.claim)
        Self.add(&table, 2, key: "c", action: "other", rate: nil)
        #expect(table.admit(at: Self.now) == [2])
        #expect(table.locks.holders(of: "db") == [2])
        #expect(table.rateUntil(of: 1) == Self.now + .seconds(50))
    }

    @Test("a lock waiter its rate limit then holds back leaves the lock waiters")
    func waiterHeldLeaves() {
        var table = FlightTable(limit: 4)
        Self.add(&table, 2, key: "c", action: "other", rate: nil)
        #expect(table.admit(at: Self.now) == [2])
        Self.add(&table, 1, key: "a", action: "deploy", rate: Self.claim)
        #expect(table.admit(at: Self.now) == [])
        #expect(table.locks.waiting == [1])
        table.rememberStart(Self.claim, at: Self.now)
        table.ended(2)
        #expect(table.admit(at: Self.now) == [])
        #expect(table.locks.waiting == [])
        #expect(table.locks.holders(of: "db") == [])
        #expect(table.takeRateHolds().map(\.run) == [1])
        #expect(table.rateUntil(of: 1) == Self.now + .seconds(60))
    }

    @Test("a lock waiter whose action is then paused leaves the lock waiters, and starts after the pause")
    func waiterPausedLeaves() {
        var table = FlightTable(limit: 4)
        Self.add(&table, 2, key: "c", action: "other", rate: nil)
        #expect(table.admit(at: Self.now) == [2])
        Self.add(&table, 1, key: "a", action: "deploy", rate: nil)
        #expect(table.admit(at: Self.now) == [])
        #expect(table.locks.waiting == [1])
        table.hold(action: "deploy")
        #expect(table.locks.waiting == [], "a paused run waits for no lock")
        table.ended(2)
        #expect(table.admit(at: Self.now) == [], "nothing of a paused action starts")
        #expect(table.locks.holders(of: "db") == [])
        table.release(action: "deploy")
        #expect(table.admit(at: Self.now) == [1])
        #expect(table.locks.holders(of: "db") == [1])
    }
}
