import BatonCore
@testable import BatonFleet
import Testing

/// A wait for needed runs stated once, as a table, and run twice: against the book a host keeps
/// (`NeedBook`: told each needed run's end in turn), and through the fleet's rows (`FleetNeeds`:
/// `waitingRows`' rows read by any host, decided by the engine's `NeedBook.outcome`). Both must
/// agree on whether the wait is decided, and how.
@Suite("Needs: one wait decided for a host and the fleet")
struct NeedWaitTableTests {
    /// A needed run as the row has it: its phase (nil: pruned from the history) and reason.
    struct Needed: Sendable, CustomStringConvertible {
        var phase: Phase?
        var reason: String? = nil
        var description: String { "\(phase?.rawValue ?? "pruned")\(reason.map { " (\($0))" } ?? "")" }
    }

    static let rows: [([Needed], NeedBook.Outcome?)] = [
        ([Needed(phase: .success), Needed(phase: .success)], .met),
        ([Needed(phase: .success), Needed(phase: .loading)], nil),
        ([Needed(phase: .queued), Needed(phase: .queued)], nil),
        ([Needed(phase: .failure), Needed(phase: .loading)], .failed("needs build-a: run 41 failed")),
        ([Needed(phase: .success), Needed(phase: .cancelled)], .failed("needs build-b: run 42 was cancelled")),
        ([Needed(phase: .loading), Needed(phase: .failure, reason: "timeout")], .failed("needs build-b: run 42 timed out")),
        ([Needed(phase: .failure, reason: "interrupted"), Needed(phase: .success)], .failed("needs build-a: run 41 was interrupted")),
        ([Needed(phase: .cancelled, reason: "replaced"), Needed(phase: .success)], .failed("needs build-a: run 41 was replaced")),
        ([Needed(phase: nil), Needed(phase: .success)],
         .failed("needs build-a: run 41 is gone from the history (retention removed it)")),
        ([Needed(phase: .retrying), Needed(phase: .success)], nil),
        // Stopped by a batond's shutdown: asked again, on one machine and on the fleet (audit D7).
        ([Needed(phase: .cancelled, reason: "shutdown"), Needed(phase: .loading)], .askAgain([0])),
        ([Needed(phase: .success), Needed(phase: .cancelled, reason: "shutdown")], .askAgain([1])),
        ([Needed(phase: .failure), Needed(phase: .cancelled, reason: "shutdown")], .failed("needs build-a: run 41 failed")),
    ]

    static let actions = ["build-a", "build-b"]

    /// The rows `FleetNeeds.waitingRows` gives for waiting run 50.
    static func fleetRows(_ needs: [Needed]) -> [[String?]] {
        needs.enumerated().map { index, need in ["50", actions[index], String(41 + index), need.phase?.rawValue, need.reason] }
    }

    @Test("the fleet's rows decide a wait as a host's book does", arguments: rows.indices)
    func agree(_ index: Int) {
        let (needs, expected) = Self.rows[index]
        // A host: run 50 waits on 41 and 42, both queued, then learns each phase in turn.
        var book = NeedBook()
        let queued = needs.indices.map { NeededRun(action: Self.actions[$0], run: Int64(41 + $0), phase: .queued) }
        #expect(book.wait(50, on: queued) == nil)
        var host: NeedBook.Outcome?
        for (offset, need) in needs.enumerated() where host == nil {
            let phase = need.phase ?? .cancelled
            if phase.isTerminal {
                host = book.ended(Int64(41 + offset), phase: phase, reason: need.phase == nil ? "pruned" : need.reason).first?.outcome
            } else {
                book.moved(Int64(41 + offset), to: phase)
            }
        }
        #expect(host == expected, "host: \(needs)")
        // The fleet: any host reads the rows and decides.
        let waits = FleetNeeds.waits(Self.fleetRows(needs))
        #expect(waits.map(\.run) == [50])
        let fleet = FleetNeeds.decided(waits).first { $0.run == 50 }?.outcome
        #expect(fleet == expected, "fleet: \(needs)")
    }

    @Test("rows of several waiting runs are grouped in order, each decided alone")
    func grouped() {
        let rows: [[String?]] = [["7", "a", "1", "success", nil], ["7", "b", "2", "loading", nil], ["9", "a", "1", "success", nil]]
        let waits = FleetNeeds.waits(rows)
        #expect(waits.map(\.run) == [7, 9])
        #expect(waits[0].needs.map(\.text) == ["a run 1", "b run 2"])
        #expect(FleetNeeds.decided(waits).map(\.run) == [9])
    }

    @Test("a run whose needs were written stays asked until a read of the rows begun after the write; one that failed to ask may be asked again at once")
    func askedUntilRead() {
        var asked = NeedsAsked()
        let before = ContinuousClock.now
        let first = asked.begin(7), second = asked.begin(7)
        #expect(first && !second)
        asked.written(7, at: before + .milliseconds(5))
        // A tick that read the rows before the write committed finds the run still asked.
        asked.prune(writtenBefore: before)
        let early = asked.begin(7)
        #expect(!early, "a tick that read `asking` before the write asked the needs again")
        asked.prune(writtenBefore: before + .milliseconds(10))
        let late = asked.begin(7), other = asked.begin(8)
        #expect(late && other)
        asked.prune(writtenBefore: before + .seconds(1))
        let asking = asked.begin(8)
        #expect(!asking, "a run still being asked is not forgotten")
        asked.forget(8)
        let again = asked.begin(8)
        #expect(again)
    }

    @Test("a need's trigger that fails for a passing reason asks again; a decision's refusal fails the wait")
    func passingErrors() {
        #expect(FleetCoordinator.passing(.storeUnavailable("disk full")) && FleetCoordinator.passing(.shuttingDown))
        #expect(!FleetCoordinator.passing(.badParam(name: "ref", message: "missing")))
        #expect(!FleetCoordinator.passing(.unknownAction("build")))
    }
}
