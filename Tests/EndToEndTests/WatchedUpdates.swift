import BatonCore
import Foundation

/// What a `BatonClient.watch(socket:)` yielded ("run.seq" of each transition), how many watches
/// it began, and waits for a condition on them that each new item wakes.
///
/// A test waits here instead of polling a count against the clock: under load (a full run's
/// synchronous tests holding Swift's few cooperative threads for seconds) a polling task could
/// wake past its deadline before the watch's tasks, queued earlier with what batond had sent,
/// had run (the watch's connections are now read on a thread of its own, `ReconnectingWatch`,
/// but the test's reading task and this timer are still tasks). A waiter is resumed by the task
/// that adds the item, or by its timer, which is queued only at the bound, behind them.
final class WatchedUpdates: Sendable {
    struct State {
        var seen: [String] = []
        var began = 0
        fileprivate var waiters: [Int: (condition: @Sendable (State) -> Bool, resume: CheckedContinuation<Bool, Never>)] = [:]
        fileprivate var nextWaiter = 0
    }

    private let state = Locked(State())

    var seen: [String] { state.withLock { $0.seen } }
    var began: Int { state.withLock { $0.began } }

    func add(_ item: String) { change { $0.seen.append(item) } }
    func begin() { change { $0.began += 1 } }

    /// Waits until `condition` holds (true) or `seconds` pass (false).
    func wait(within seconds: Int = 60, until condition: @escaping @Sendable (State) -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> Int? in
                if condition(state) { return nil }
                defer { state.nextWaiter += 1 }
                state.waiters[state.nextWaiter] = (condition, continuation)
                return state.nextWaiter
            }
            guard let id else { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: .seconds(seconds))
                state.withLock { $0.waiters.removeValue(forKey: id) }?.resume.resume(returning: false)
            }
        }
    }

    /// Changes the state, then resumes (outside the lock) the waiters whose condition now holds.
    private func change(_ body: @Sendable (inout State) -> Void) {
        let ready = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            body(&state)
            let met = state.waiters.filter { $0.value.condition(state) }
            for id in met.keys { state.waiters[id] = nil }
            return met.values.map(\.resume)
        }
        for resume in ready { resume.resume(returning: true) }
    }
}
