import BatonCore
@testable import BatonFleet
import Testing

/// A stop (a replace, a cancel) stated once, as a table, and run twice: against the machine a
/// host holds for the run (`RunMachine`), and through the fleet's one stop (`FleetStop`, the
/// engine's `StopDecision` on the run's row). Each row is one phase; both must agree: a queued
/// run ends at once with the same phase and detail; a run with an attempt is stopped by its
/// owner's machine (the fleet marks it, and stops it itself when the owner is this host).
@Suite("StopDecision: one stop for a host and the fleet")
struct StopDecisionTableTests {
    static let me = "web-1/1/aa"
    static let now = Timestamp(rawValue: 100_000_000)

    enum Expected: Sendable, Equatable {
        /// It ends now, in this phase.
        case ends(Phase)
        /// Its owner's machine stops it; `here`: this host is the owner.
        case owner(here: Bool)
        case nothing
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var phase: Phase
        var stop: RunMachine.Stop
        var owner = "web-2/1/bb"
        var expected: Expected
        var testDescription: String { "\(phase.rawValue), \(stop.recordText), owner \(owner)" }
    }

    static let cases: [Case] = [
        Case(phase: .queued, stop: .replaced(by: 9), expected: .ends(.cancelled)),
        Case(phase: .queued, stop: .cancelled(by: 1000), expected: .ends(.cancelled)),
        Case(phase: .queued, stop: .cancelled(by: 1000), owner: me, expected: .ends(.cancelled)),
        Case(phase: .loading, stop: .replaced(by: 9), expected: .owner(here: false)),
        Case(phase: .loading, stop: .replaced(by: 9), owner: me, expected: .owner(here: true)),
        Case(phase: .loading, stop: .cancelled(by: nil), expected: .owner(here: false)),
        Case(phase: .retrying, stop: .replaced(by: 9), expected: .owner(here: false)),
        Case(phase: .retrying, stop: .cancelled(by: 1000), owner: me, expected: .owner(here: true)),
        Case(phase: .success, stop: .replaced(by: 9), expected: .nothing),
        Case(phase: .failure, stop: .cancelled(by: 1000), expected: .nothing),
        Case(phase: .cancelled, stop: .replaced(by: 9), owner: me, expected: .nothing),
    ]

    /// The host's machine for a run in `phase`, driven there by its own events.
    static func machine(in phase: Phase) -> RunMachine {
        var machine = RunMachine(retries: 1)
        switch phase {
        case .queued: break
        case .loading: _ = machine.handle(.start)
        case .retrying:
            _ = machine.handle(.start)
            _ = machine.handle(.exited(AttemptResult(succeeded: false, exitCode: 1)))
        case .success:
            _ = machine.handle(.start)
            _ = machine.handle(.exited(AttemptResult(succeeded: true, exitCode: 0)))
        case .failure:
            _ = machine.handle(.start)
            _ = machine.handle(.exited(AttemptResult(succeeded: false, exitCode: 1)))
            _ = machine.handle(.backoffElapsed)
            _ = machine.handle(.exited(AttemptResult(succeeded: false, exitCode: 1)))
        case .cancelled:
            _ = machine.handle(.stop(.cancelled(by: nil)))
        }
        return machine
    }

    @Test("the host's machine and the fleet's row decide a stop alike", arguments: cases)
    func table(_ row: Case) throws {
        var machine = Self.machine(in: row.phase)
        #expect(machine.phase == row.phase, "the machine was driven to \(row.phase)")
        let effects = machine.handle(.stop(row.stop))

        var slot = KeySlot(holder: 5, line: [7])
        let facts = TriggerBatch.RunFacts(phase: row.phase, lastSeq: 3, owner: row.owner)
        let fleet = FleetStop.decide(7, row.stop, facts, slot: &slot, me: Self.me, at: Self.now)

        switch row.expected {
        case let .ends(phase):
            // One machine ends it at once; the fleet writes the very transition that machine records.
            #expect(effects == [.record(phase, row.stop.detail), .finish(phase)])
            let end = try #require(fleet?.end)
            #expect(end == Transition(runID: 7, seq: 4, from: .queued, to: phase, at: Self.now, detail: row.stop.detail))
            #expect(slot == KeySlot(holder: 5), "the ended run leaves its key's line")
            #expect(try fleet?.statements().count == 2)
        case let .owner(here):
            // The owner's machine acts on it (terminates its attempt, or ends it between attempts).
            #expect(!effects.isEmpty)
            #expect(fleet?.decision == .owner(here: here))
            #expect(fleet?.here == here)
            #expect(try fleet?.statements().map(\.sql) == [StopRequest.mark(7, row.stop).sql])
            #expect(slot == KeySlot(holder: 5, line: [7]), "its key waits for its owner's end")
        case .nothing:
            #expect(effects.isEmpty)
            #expect(fleet == nil)
            #expect(slot == KeySlot(holder: 5, line: [7]))
        }
    }

    @Test("a run the rows do not have is not stopped")
    func unknownRun() {
        var slot = KeySlot(holder: 5)
        #expect(FleetStop.decide(7, .replaced(by: 9), nil, slot: &slot, me: Self.me, at: Self.now) == nil)
        #expect(slot == KeySlot(holder: 5))
    }

    @Test("a queued run's end is written guarded (whoever owns it) before its transition")
    func endStatements() throws {
        let end = Transition(runID: 7, seq: 2, from: .queued, to: .cancelled, at: Self.now, detail: RunMachine.Stop.replaced(by: 9).detail)
        let stop = FleetStop(run: 7, stop: .replaced(by: 9), decision: .ends(end))
        let statements = try stop.statements()
        #expect(statements[0].sql == FleetJournal.update(end, as: nil).sql)
        #expect(statements[0].parameters == FleetJournal.update(end, as: nil).parameters)
        #expect(statements[1].sql.hasPrefix("INSERT INTO transitions"))
    }
}
