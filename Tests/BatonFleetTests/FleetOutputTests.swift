@testable import BatonFleet
import BatonCore
import Testing

@Suite("Fleet: a run's output as rows, and a follower's cursor")
struct FleetOutputTests {
    static func chunk(_ start: Int64, _ text: String, _ stream: StandardStream = .stdout) -> OutputChunk {
        OutputChunk(start: start, stream: stream, at: Timestamp(rawValue: 7), bytes: Array(text.utf8))
    }

    @Test("a cursor tells each byte once, in order: chunks before it skipped, one across it cut, a gap jumped", arguments: [
        // (from, chunks read, told, next)
        (Int64(0), [(0, "ab"), (2, "cd")], [(0, "ab"), (2, "cd")], Int64(4)),
        (3, [(0, "ab"), (2, "cd"), (4, "ef")], [(3, "d"), (4, "ef")], 6),
        (2, [(0, "ab")], [], 2),
        (2, [(10, "xy")], [(10, "xy")], 12),
        (0, [], [], 0),
    ] as [(Int64, [(Int64, String)], [(Int64, String)], Int64)])
    func cursor(from: Int64, read: [(Int64, String)], told: [(Int64, String)], next: Int64) {
        var cursor = OutputCursor(run: 1, from: from)
        #expect(cursor.take(read.map { Self.chunk($0.0, $0.1) }) == told.map { Self.chunk($0.0, $0.1) })
        #expect(cursor.next == next)
        // The same read again (a read tried again) tells nothing more.
        #expect(cursor.take(read.map { Self.chunk($0.0, $0.1) }).isEmpty)
    }

    @Test("a write is one statement for its chunks however many, with the removal and the totals; nothing to remove, no DELETE")
    func statements() {
        let chunks = (0..<5).map { Self.chunk(Int64($0 * 2), "a\u{0}", $0 % 2 == 0 ? .stdout : .stderr) }
        let write = OutputWrite(runID: 9, chunks: chunks, removeBefore: 40, head: 8, total: 50, dropped: 30)
        let statements = FleetOutput.statements(write, owner: "web-1/7/ab")
        #expect(statements.count == 3)
        #expect(statements[0].sql.hasPrefix("DELETE") && statements[0].parameters == ["9", "web-1/7/ab", "8", "40"])
        #expect(statements[1].parameters == ["9", "web-1/7/ab", "{0,2,4,6,8}", "{1,2,1,2,1}", "{7,7,7,7,7}", "{6100,6100,6100,6100,6100}"])
        #expect(statements[2].parameters == ["9", "web-1/7/ab", "50", "30", "8"])
        // Every statement is guarded by the run's owner.
        #expect(statements.allSatisfy { $0.sql.contains("incarnation = $2") })
        let quiet = FleetOutput.statements(OutputWrite(runID: 9, chunks: [], removeBefore: nil, head: 8, total: 50, dropped: 50), owner: "o")
        #expect(quiet.count == 1 && quiet[0].sql.contains("output_totals"))
    }

    @Test("the feed ticks for a phase change, a new connection, the backstop or a second gone by; output alone only wakes its followers; a stop marked has the tick read the stops",
          arguments: [
              // (notifications, last tick's age in ms, tick, runs woken, stops read)
              ([("baton", "")], 10, true, [], false),
              ([("baton", ""), ("baton", "stop")], 10, true, [], true),
              ([("baton", "stop")], 10, true, [], true),
              ([("baton_output", "stop")], 10, false, [], false),
              ([("baton_output", "4"), ("baton_output", "9"), ("baton_output", "4")], 10, false, [4, 9], false),
              ([("baton_output", "4"), ("baton", "")], 10, true, [4], false),
              ([("baton_output", "4")], 1_000, true, [4], false),
              ([("baton_output", "not a run")], 10, false, [], false),
              ([], 10, true, [], false),
          ] as [([(String, String)], Int, Bool, Set<Int64>, Bool)])
    func feedWake(notes: [(String, String)], age: Int, tick: Bool, runs: Set<Int64>, stops: Bool) {
        let wake = FeedWake(notes.map { (channel: $0.0, payload: $0.1) }, lastTickAge: .milliseconds(age), catchUpDue: false)
        #expect(wake == FeedWake(tick: tick, outputRuns: runs, stops: stops))
    }

    @Test("a new connection ticks and reads the stops (what was sent before it is caught up)")
    func feedWakeNewConnection() {
        #expect(FeedWake(nil, lastTickAge: .zero, catchUpDue: false) == FeedWake(tick: true, outputRuns: [], stops: true))
    }

    @Test("a batch that wrote chunks notifies once per run, on the output channel")
    func notify() {
        let statement = FleetOutput.notify([9, 3])
        #expect(statement.sql.contains("pg_notify('baton_output'"))
        #expect(statement.parameters == ["{3,9}"])
    }

    @Test("bytes round-trip through hex: NUL, 0xff, every byte")
    func hex() {
        let bytes = (0...255).map(UInt8.init)
        #expect(FleetOutput.unhex(FleetJournal.hex(bytes)) == bytes)
        #expect(FleetOutput.unhex("00FFa0") == [0, 255, 160])
    }

    @Test("a full disk sheds the chunks of output writes (their totals stay) and nothing else; their runs become lossy")
    func shed() {
        let transition = Transition(runID: 3, seq: 2, from: .queued, to: .loading, at: Timestamp(rawValue: 1), detail: TransitionDetail())
        let entries: [JournalEntry] = [
            .transition(transition),
            .outputChunks(OutputWrite(runID: 3, chunks: [Self.chunk(0, "x")], removeBefore: nil, head: 4, total: 1, dropped: 0)),
            .outputChunks(OutputWrite(runID: 4, chunks: [], removeBefore: nil, head: 4, total: 0, dropped: 0)),
        ]
        var lossy: Set<Int64> = []
        let shed = FleetOutput.shed(entries, into: &lossy)
        #expect(lossy == [3])
        #expect(shed[0] == entries[0] && shed[2] == entries[2])
        #expect(shed[1] == .outputChunks(OutputWrite(runID: 3, chunks: [], removeBefore: nil, head: 4, total: 1, dropped: 0)))
        #expect(FleetOutput.recount(lossy).map(\.parameters) == [["3"]])
    }
}
