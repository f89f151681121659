import Foundation

/// A value guarded by a pthread mutex (NSLock).
///
/// Used instead of `Synchronization.Mutex`, whose futex-based lock on Linux is invisible to
/// ThreadSanitizer: with it, every guarded access was reported as a race and the suite could not
/// run clean under `swift test --sanitize=thread`.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
