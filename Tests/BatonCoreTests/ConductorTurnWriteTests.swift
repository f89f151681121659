@testable import BatonCore
@testable import BatonEngine
import Dispatch
import Testing

/// The conductor's store items of one turn of the loop reach the store together, in order, once
/// the turn's work is done (issue 39: one wake-up of the writer and one group for them).
@Suite("Conductor: a turn's writes go to the store together at its end", .offPool)
struct ConductorTurnWriteTests {
    /// Records, for each item, what the turn had done when the item reached the store.
    final class RecordingStore: RunStore {
        let seen = Locked<[String]>([])
        let marks = Locked<[String]>([])

        func enqueue(_ entries: [JournalEntry], completion: @escaping @Sendable (Result<Void, BatonError>) -> Void) {
            let marks = marks.withLock { $0 }
            seen.withLock { $0.append("item \(entries.count) after \(marks.joined(separator: ","))") }
            completion(.success(()))
        }

        func recoverableState() throws(BatonError) -> RecoverableState { RecoverableState(nextRunID: 1, unfinished: []) }
    }

    @Test("items made in one turn reach the store after the turn's work, in the order made, before the next turn")
    func oneTurn() {
        let store = RecordingStore(), reactor = Reactor()
        let conductor = Conductor(actions: [], store: store, reactor: reactor)
        let done = DispatchSemaphore(value: 0)
        defer { done.signal() }
        let committed = Locked(0)
        reactor.post {
            conductor.write([]) { _ in committed.withLock { $0 += 1 } }
            store.marks.withLock { $0.append("first") }
            conductor.write([.output(runID: 1, tail: [], truncated: false)]) { _ in committed.withLock { $0 += 1 } }
            store.marks.withLock { $0.append("second") }
            reactor.post {
                store.marks.withLock { $0.append("next turn") }
                done.signal()
            }
        }
        #expect(done.wait(timeout: .usualWait) == .success)
        // Handed over one by one (before), the first reached the store before the turn went on.
        #expect(store.seen.withLock { $0 } == ["item 0 after first,second", "item 1 after first,second"])
        #expect(committed.withLock { $0 } == 2)
    }

    @Test("a long turn hands over every 16 items, so that the writer commits while the loop goes on")
    func longTurn() {
        let store = RecordingStore(), reactor = Reactor()
        let conductor = Conductor(actions: [], store: store, reactor: reactor)
        let done = DispatchSemaphore(value: 0)
        defer { done.signal() }
        reactor.post {
            for index in 1...Conductor.handOverEvery + 1 {
                conductor.write([]) { _ in }
                store.marks.withLock { $0 = ["\(index) made"] }
            }
            reactor.post { done.signal() }
        }
        #expect(done.wait(timeout: .usualWait) == .success)
        let seen = store.seen.withLock { $0 }
        let every = Conductor.handOverEvery
        #expect(seen == Array(repeating: "item 0 after \(every - 1) made", count: every) + ["item 0 after \(every + 1) made"])
    }

    @Test("an item that ends a run goes to the store at once, with the items made before it; later ones at the turn's end")
    func endAtOnce() {
        let store = RecordingStore(), reactor = Reactor()
        let conductor = Conductor(actions: [], store: store, reactor: reactor)
        let done = DispatchSemaphore(value: 0)
        defer { done.signal() }
        let end = JournalEntry.transition(Transition(runID: 1, seq: 3, from: .loading, to: .success, at: .now))
        reactor.post {
            conductor.write([]) { _ in }
            conductor.write([end]) { _ in }
            store.marks.withLock { $0.append("end made") }
            conductor.write([]) { _ in }
            store.marks.withLock { $0.append("last made") }
            reactor.post { done.signal() }
        }
        #expect(done.wait(timeout: .usualWait) == .success)
        #expect(store.seen.withLock { $0 } == ["item 0 after ", "item 1 after ", "item 0 after end made,last made"])
    }
}
