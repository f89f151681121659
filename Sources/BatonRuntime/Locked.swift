import BatonEngine
import CBatonSystem

/// A value guarded by a pthread mutex (ThreadLock).
///
/// Used instead of `Synchronization.Mutex`, whose futex-based lock on Linux is invisible to
/// ThreadSanitizer: with it, every guarded access was reported as a race and the suite could not
/// run clean under `swift test --sanitize=thread`.
public final class Locked<Value>: @unchecked Sendable {
    // Inlinable, as `LoopOwned.access` is: every module's locks are specialized where they are taken.
    @usableFromInline let lock = ThreadLock()
    // Exclusivity unchecked: the mutex lets one `withLock` at a time reach the value (a reentered
    // one deadlocks first), so the runtime's check of each access guarded nothing more (issue 39).
    @exclusivity(unchecked) @usableFromInline var value: Value

    @inlinable public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        #if DEBUG
        _ = baton_lock_depth(1)
        defer { _ = baton_lock_depth(-1) }
        #endif
        return try body(&value)
    }
}

/// The check that no effect is performed under a lock: every place that performs effects (the
/// conductor's, an attempt's, a worker's batch and completions, a connection's writes, every
/// handler the reactor runs) calls it. Debug builds (the test suite, batond included) count the
/// `Locked` locks each thread holds and stop at once when one is; release builds do nothing.
@inline(__always)
public func assertNoLockHeld(_ what: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line) {
    #if DEBUG
    let held = baton_lock_depth(0)
    precondition(held == 0, "\(what()) while \(held) lock(s) held", file: file, line: line)
    #endif
}
