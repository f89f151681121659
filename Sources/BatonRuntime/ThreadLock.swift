import BatonEngine
import Glibc

/// A pthread mutex, as NSLock was: for state that more than one field of a class makes up.
/// ThreadSanitizer sees it (it does not see `Synchronization.Mutex`'s futex on Linux).
public final class ThreadLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Takes the mutex, waiting while another thread holds it.
    public func lock() { pthread_mutex_lock(mutex) }

    /// Gives the mutex back.
    public func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the mutex.
    public func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}
