import BatonCore
@testable import BatonFleet
import Testing

/// The feed's refresh hands the loop only the runs in flight that changed (`HandedRuns`): after
/// each refresh the loop's table of the fleet's runs (`CoordinatorState.fleetInFlight`) must be
/// what a hand-over of every run would have made it, whatever the deliveries between refreshes
/// (ahead of the refresh's read, behind it, of runs it never saw, of ends) and whatever changed
/// outside the rows (a decoration: here the run's approval).
@Suite("HandedRuns: the refresh hands only what changed, and the loop learns every change")
struct HandedRunsTests {
    static func run(_ id: Int64, _ phase: Phase, line: Int? = nil) -> RunSnapshot {
        var run = RunSnapshot(id: id, action: "t", key: "k\(id % 7)", phase: phase, policy: .queue, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: 1))
        run.line = line
        return run
    }

    /// A run's row as the refresh reads it (its id first), and the run decoded from it.
    static func row(_ run: RunSnapshot) -> [String?] { [String(run.id), run.phase.rawValue, run.line.map(String.init)] }
    static func decode(_ row: [String?]) -> RunSnapshot {
        run(Int64(row[0]!)!, Phase(rawValue: row[1]!)!, line: row[2].flatMap { Int($0) })
    }

    static func refresh(_ handed: inout HandedRuns, _ runs: [RunSnapshot]) -> CoordinatorState.Event {
        handed.refresh(runs.map(row), run: decode, same: { _ in true })
    }

    @Test("the first refresh hands every run; the next only what changed and what is gone")
    func changesOnly() {
        var handed = HandedRuns()
        let first = [Self.run(1, .queued), Self.run(2, .loading)]
        guard case let .refreshed(all) = Self.refresh(&handed, first) else { Issue.record("the first refresh is not whole"); return }
        #expect(all == first)
        guard case let .refreshedChanges(changed, gone) = Self.refresh(&handed, [Self.run(1, .loading), Self.run(3, .queued, line: 1)]) else {
            Issue.record("a later refresh is whole"); return
        }
        #expect(Set(changed.map(\.id)) == [1, 3])
        #expect(gone == [2])
        guard case let .refreshedChanges(none, noneGone) = Self.refresh(&handed, [Self.run(1, .loading), Self.run(3, .queued, line: 1)]) else {
            Issue.record("a later refresh is whole"); return
        }
        #expect(none.isEmpty && noneGone.isEmpty)
    }

    @Test("after every refresh the loop's table is what a whole hand-over makes it", arguments: 0..<40)
    func walk(seed: Int) {
        var random = SplitMix(seed: UInt64(seed) &* 0x2545_F491_4F6C_DD1D &+ 1)
        var database: [Int64: RunSnapshot] = [:]
        var pending: [(RunSnapshot, Bool)] = []
        var whole = CoordinatorState(limit: 2), changes = CoordinatorState(limit: 2)
        var handed = HandedRuns()
        var approvals: [Int64: ApprovalState] = [:]
        var next: Int64 = 1
        for _ in 0..<400 {
            switch random.next() % 6 {
            case 0:
                // A run made: its `queued` is delivered later.
                database[next] = Self.run(next, .queued)
                pending.append((Self.run(next, .queued), false))
                next += 1
            case 1:
                // A transition of a run in flight: started, or ended (gone from the rows).
                guard let id = database.keys.sorted().randomElement(using: &random) else { continue }
                if random.next() % 2 == 0, database[id]?.phase == .queued {
                    database[id]?.phase = .loading
                    pending.append((database[id]!, false))
                } else {
                    var ended = database.removeValue(forKey: id)!
                    ended.phase = .success
                    pending.append((ended, true))
                }
            case 2:
                // A change no transition brings: its place in its key's line (in its row), or its
                // approval (a decoration, read apart from the row).
                guard let id = database.keys.sorted().randomElement(using: &random) else { continue }
                if random.next() % 2 == 0 {
                    database[id]?.line = Int(random.next() % 3)
                } else {
                    approvals[id] = approvals[id] == nil ? ApprovalState(by: ["ann"], until: nil) : nil
                }
            case 3, 4:
                // The feed delivers some of what it caught up, in order.
                for _ in 0..<Int(random.next() % 3) where !pending.isEmpty {
                    let (run, ended) = pending.removeFirst()
                    handed.delivering(run.id)
                    _ = whole.handle(.delivered(run, ended: ended))
                    _ = changes.handle(.delivered(run, ended: ended))
                }
            default:
                let decorated = { (row: [String?]) -> RunSnapshot in
                    var run = Self.decode(row)
                    run.approval = approvals[run.id]
                    return run
                }
                let rows = database.keys.sorted().map { Self.row(database[$0]!) }
                _ = whole.handle(.refreshed(rows.map(decorated)))
                _ = changes.handle(handed.refresh(rows, run: decorated, same: { $0.approval == approvals[$0.id] }))
                #expect(changes.fleetInFlight == whole.fleetInFlight, "seed \(seed)")
            }
        }
    }

    @Test("a backstop: every wholeEvery refreshes one hands every run, and so does the first after the feed reconnects")
    func wholeNowAndThen() {
        var handed = HandedRuns()
        let runs = [Self.run(1, .queued), Self.run(2, .loading)]
        var whole: [Int] = []
        for index in 1...(HandedRuns.wholeEvery * 2 + 1) {
            if case .refreshed = Self.refresh(&handed, runs) { whole.append(index) }
        }
        #expect(whole == [1, HandedRuns.wholeEvery + 1, HandedRuns.wholeEvery * 2 + 1])
        handed.forget()
        guard case let .refreshed(all) = Self.refresh(&handed, runs) else { Issue.record("the refresh after forget is not whole"); return }
        #expect(all == runs)
        guard case let .refreshedChanges(none, gone) = Self.refresh(&handed, runs) else { Issue.record("the next is whole"); return }
        #expect(none.isEmpty && gone.isEmpty)
    }
}
