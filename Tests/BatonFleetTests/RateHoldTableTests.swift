import BatonCore
@testable import BatonFleet
import Testing

/// "May this run start now under its rate limit" (`RateBook.hold`), stated once as a table: each
/// row against the engine's book and against a bucket as the fleet reads it from its rows
/// (`FleetRates.Bucket`), through `RateBucket.admit`, the hold-then-count its starts and trigger
/// batches ask (held: when it may; let: it started and counts).
@Suite("RateBook.hold: the one rate rule, as a host and as the fleet ask it")
struct RateHoldTableTests {
    static let t = Timestamp(rawValue: 1_000_000_000)
    static let claim = RateClaim(bucket: "key k", limit: RateLimit(runs: 2, per: .seconds(10)))

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// Starts inside (or left) the window, seconds after `t`.
        var starts: [Int] = []
        /// The bucket's runs held back already (each with a `rate_until`).
        var held: [Int64] = []
        /// When asked, seconds after `t`.
        var at = 5
        /// When run 5 may start, seconds after `t`; nil: now.
        var expected: Int?
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "an empty bucket: it starts"),
        Case(name: "one start in the window of two: it starts", starts: [0]),
        Case(name: "two starts fill the window: when the first leaves it", starts: [0, 4], expected: 10),
        Case(name: "exactly a window after the first start, it has left", starts: [0, 4], at: 10),
        Case(name: "one start and an older run held: that one takes the place, this one a window after", starts: [0], held: [3], expected: 10),
        Case(name: "a younger run held waits behind it and does not count", starts: [0], held: [9]),
        Case(name: "older runs held alone fill the window: a window from now", held: [1, 2], expected: 15),
        Case(name: "a full window and one held ahead: a window after the second start", starts: [0, 4], held: [2], expected: 14),
        Case(name: "a full window and two held ahead, one behind: two windows after the first", starts: [0, 4], held: [1, 2, 7], expected: 20),
        Case(name: "a start after now (a clock stepped back) still counts", starts: [0, 9], at: -1, expected: 10),
    ]

    static func seconds(_ value: Int) -> Timestamp { t + .seconds(value) }

    @Test("a host's book", arguments: cases)
    func engine(_ row: Case) {
        var book = RateBook()
        for start in row.starts { book.record(Self.claim, at: Self.seconds(start)) }
        #expect(book.hold(5, Self.claim, at: Self.seconds(row.at), held: row.held) == row.expected.map(Self.seconds))
    }

    @Test("the fleet's bucket, from its rows: held runs have a rate_until, others wait without one and do not count", arguments: cases)
    func fleet(_ row: Case) {
        var bucket = FleetRates.Bucket()
        bucket.starts = row.starts.map(Self.seconds)
        for run in row.held { bucket.waiting[run] = .init(key: "k", until: Self.seconds(30)) }
        bucket.waiting[4] = .init(key: "k", until: nil)
        bucket.waiting[5] = .init(key: "k", until: nil)
        let expected: RateBook.Admission = row.expected.map { .held(until: Self.seconds($0)) } ?? .started
        #expect(bucket.admit(5, Self.claim, at: Self.seconds(row.at)) == expected)
    }

    @Test("a run the fleet lets start waits no longer and counts: the next one is held")
    func started() {
        var bucket = FleetRates.Bucket()
        bucket.starts = [Self.seconds(0)]
        bucket.waiting = [5: .init(key: "k"), 6: .init(key: "k")]
        #expect(bucket.admit(5, Self.claim, at: Self.seconds(1)) == .started)
        #expect(bucket.waiting[5] == nil && bucket.starts == [Self.seconds(0), Self.seconds(1)])
        #expect(bucket.admit(6, Self.claim, at: Self.seconds(1)) == .held(until: Self.seconds(10)))
        #expect(bucket.waiting[6]?.until == Self.seconds(10), "held back, it keeps its hold: it counts ahead of younger runs")
    }
}
