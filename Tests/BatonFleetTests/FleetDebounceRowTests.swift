import BatonCore
@testable import BatonFleet
import Testing

/// How a debounced trigger reads its key's pending run from the rows its transaction holds
/// (`FleetDebounce.reading`, into the key's `KeyFacts`): the engine's choice of the run
/// (`KeyDecision.view`, `KeySlot.pendingRun`) and the engine's window (`DebounceWindow`), on the database's clock.
@Suite("FleetDebounce: a debounced trigger against its key's pending run")
struct FleetDebounceRowTests {
    /// A row of `pending`: run `id` whose burst began at 1 s, due at `until`, with a 5 s window
    /// and a 50 s maxWait (µs). (`now`: the clock the transaction read, not in the row.)
    static func row(now: Int64, id: Int64, until: Int64 = 6_000_000) -> [String?] {
        [String(id), "1000000", String(until), "5000000", "50000000"]
    }

    static func window(until: Int64) -> DebounceWindow {
        DebounceWindow(window: .seconds(5), maxWait: .seconds(50), first: Timestamp(rawValue: 1_000_000), deadline: Timestamp(rawValue: until))
    }

    @Test("the holder before the follow-up, neither when being replaced; none without a candidate's row",
          arguments: [
              ([row(now: 2_000_000, id: 7)], KeySlot(holder: 7), Int64?.some(7)),
              ([row(now: 2_000_000, id: 8)], KeySlot(holder: 7, followUp: 8), 8),           // the holder loads: its follow-up
              ([row(now: 2_000_000, id: 7), row(now: 2_000_000, id: 8)], KeySlot(holder: 7, followUp: 8), 7),
              ([row(now: 2_000_000, id: 7)], KeySlot(holder: 7, draining: [7]), nil),        // being replaced: not shared
              ([row(now: 2_000_000, id: 9)], KeySlot(holder: 7), nil),                       // a row of a run the slot does not hold
              ([[nil, nil, nil, nil, nil]], KeySlot(holder: 7), nil),             // the holder loads, no follow-up
          ] as [([[String?]], KeySlot, Int64?)])
    func choice(rows: [[String?]], slot: KeySlot, expected: Int64?) throws {
        let windows = try #require(FleetDebounce.reading(rows))
        let pending = KeyDecision.view(KeyFacts(slot: slot, now: Timestamp(rawValue: 2_000_000), windows: windows)).pending
        #expect(pending?.run == expected)
        if expected != nil { #expect(pending?.window == Self.window(until: 6_000_000)) }
    }

    @Test("no row (the statement always answers one) is no reading: the trigger's transaction fails rather than read it as no window")
    func noRow() {
        #expect(FleetDebounce.reading([]) == nil)
        #expect(FleetDebounce.reading([[nil, nil, nil, nil, nil]]) == [:])
    }

    @Test("a window as kept is read back as it was, its deadline held between the first window and the cap")
    func keptWindow() {
        #expect(Self.window(until: 8_000_000).deadline == Timestamp(rawValue: 8_000_000))
        #expect(Self.window(until: 2_000_000).deadline == Timestamp(rawValue: 6_000_000), "never before the first trigger's window")
        #expect(Self.window(until: 99_000_000).deadline == Timestamp(rawValue: 51_000_000), "never past first + maxWait")
        var fresh = DebounceWindow(window: .seconds(5), maxWait: .seconds(50), first: Timestamp(rawValue: 1_000_000))
        fresh.restart(at: Timestamp(rawValue: 3_000_000))
        #expect(Self.window(until: 8_000_000) == fresh, "the same value as the engine's own")
    }

    @Test("a window's row holds what the engine's value holds, in µs")
    func stored() {
        let statement = FleetDebounce.store(Self.window(until: 8_000_000), run: 7)
        #expect(statement.parameters == ["7", "1000000", "8000000", "5000000", "50000000"])
    }

    @Test("a queued run's row says when it starts; a run that started does not debounce")
    func rowColumn() {
        var row = [String?](repeating: nil, count: FleetRows.runColumnCount)
        row[0] = "7"
        row[3] = "queued"
        row[26] = "8000000"
        #expect(FleetRows.run(row).debounceUntil == Timestamp(rawValue: 8_000_000))
        row[3] = "loading"
        #expect(FleetRows.run(row).debounceUntil == nil)
    }
}
