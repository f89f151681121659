@testable import BatonCore
@testable import BatonEngine
import Testing

/// One stop signal ends the drain even when the store never answers (issue 37, item 7).
@Suite("Conductor shutdown with a store that cannot write")
struct ConductorShutdownWriteTests {
    /// A store that writes until `hold()`, then keeps every item unanswered, as a database locked
    /// for good would; `ends` tells each run whose end it holds.
    final class StuckStore: RunStore {
        private let held = Locked(false)
        let ends: AsyncStream<Int64>
        private let told: AsyncStream<Int64>.Continuation

        init() { (ends, told) = AsyncStream.makeStream() }

        func hold() { held.withLock { $0 = true } }

        func enqueue(_ entries: [JournalEntry], completion: @escaping @Sendable (Result<Void, BatonError>) -> Void) {
            guard held.withLock({ $0 }) else { return completion(.success(())) }
            for case let .transition(transition) in entries where transition.to.isTerminal { told.yield(transition.runID) }
        }

        func recoverableState() throws(BatonError) -> RecoverableState { RecoverableState(nextRunID: 1, unfinished: []) }
    }

    @Test("a run's end the store never commits: shutdown stops waiting for it after the write timeout (one SIGTERM never ended batond)")
    func endNeverWritten() async throws {
        let store = StuckStore(), gate = Gate()
        let conductor = Conductor(actions: [], store: store)
        conductor.register(Action(name: "a")) { _ in await gate.wait() }
        let ticket = try await conductor.trigger(TriggerRequest(action: "a"))
        await untilLoading(ticket)
        store.hold()
        gate.open()
        for await run in store.ends where run == ticket.run.id { break }
        // A deadline, not a speed: before the fix the shutdown waited for the write forever.
        let stopped = await withTaskGroup(of: Bool.self) { group in
            group.addTask { await conductor.shutdown(grace: .zero); return true }
            group.addTask { try? await Task.sleep(for: .seconds(40)); return false }
            let first = await group.next() ?? false
            if !first { conductor.stopRemaining() }
            group.cancelAll()
            return first
        }
        #expect(stopped, "shutdown waited for a write the store never made")
    }
}
