import BatonClient
import BatonCore
import Testing

@Suite("A watch's cursor")
struct WatchCursorKeeperTests {
    static func update(_ run: Int64, _ seq: Int, at: Int64) -> RunUpdate {
        RunUpdate(run: RunSnapshot(id: run, action: "a", key: "a", phase: .queued, policy: .reject, params: [:], trigger: nil,
                                   queuedAt: Timestamp(rawValue: at)),
                  transition: Transition(runID: run, seq: seq, from: nil, to: .queued, at: Timestamp(rawValue: at)))
    }

    @Test("none before the first watch; the first watch's start; then the latest transition by time, run, sequence, never back; progress moves nothing")
    func keeper() {
        var cursor: WatchCursor?
        cursor.begin(at: nil)
        #expect(cursor == nil, "no watch began yet")
        cursor.begin(at: Timestamp(rawValue: 50))
        cursor.begin(at: Timestamp(rawValue: 70))
        #expect(cursor == WatchCursor(at: Timestamp(rawValue: 50), run: 0, seq: 0))
        cursor.saw(Self.update(4, 2, at: 100))
        cursor.saw(Self.update(3, 1, at: 100))
        #expect(cursor == WatchCursor(at: Timestamp(rawValue: 100), run: 4, seq: 2))
        cursor.saw(Self.update(9, 9, at: 90))
        cursor.saw(RunUpdate(run: Self.update(9, 9, at: 500).run, transition: nil))
        #expect(cursor == WatchCursor(at: Timestamp(rawValue: 100), run: 4, seq: 2))
        cursor.begin(at: Timestamp(rawValue: 200))
        #expect(cursor == WatchCursor(at: Timestamp(rawValue: 100), run: 4, seq: 2), "a later watch's start moves nothing")
        cursor.saw(Self.update(1, 1, at: 101))
        #expect(cursor == WatchCursor(at: Timestamp(rawValue: 101), run: 1, seq: 1))
    }
}
