import BatonEngine
import Dispatch
import Synchronization

/// A result handed once from one thread (a task, a worker's completion, a thread of a benchmark)
/// to another that waits for it, or reads it once it is there (a key loaded once; a link of a
/// chain that one thread extends and another follows): a channel, not state that two threads
/// share and change. The
/// first `set` stands and a second is refused; `wait` returns the value once it is set (at once
/// if it was). No lock is taken: the value is published by an atomic reference and the waiter
/// woken by a semaphore, so nothing is done under a lock, and waiting while holding a `Locked`
/// lock stops a debug build (`assertNoLockHeld`).
public final class OneShot<Value: Sendable>: Sendable {
    private final class Box: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private let reference = AtomicLazyReference<Box>()
    private let arrived = DispatchSemaphore(value: 0)

    public init() {}

    /// Sets the value and wakes the waiters; false, changing nothing, when it was set before.
    @discardableResult
    public func set(_ value: Value) -> Bool {
        let box = Box(value)
        guard reference.storeIfNil(box) === box else { return false }
        arrived.signal()
        return true
    }

    /// The value if it was set, nil before: never waits.
    public var value: Value? { reference.load()?.value }

    /// Waits until the value is set, then returns it.
    public func wait() -> Value {
        if let box = reference.load() { return box.value }
        assertNoLockHeld("waiting for a one-shot result")
        arrived.wait()
        arrived.signal()   // passed on: another waiter wakes too
        return reference.load()!.value
    }

    /// Waits until the value is set or `deadline` passes: the value, or nil at the deadline.
    public func wait(until deadline: DispatchTime) -> Value? {
        if let box = reference.load() { return box.value }
        assertNoLockHeld("waiting for a one-shot result")
        // At the deadline the value may have come all the same: then it is returned.
        guard arrived.wait(timeout: deadline) == .success else { return value }
        arrived.signal()
        return reference.load()!.value
    }
}
