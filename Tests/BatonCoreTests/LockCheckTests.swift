@testable import BatonCore
@testable import BatonEngine
import CBatonSystem
import Foundation
import Testing

/// The count behind `assertNoLockHeld`: what the suite relies on to say that no effect is
/// performed under a lock. (The check itself stops the process, so it is seen failing by hand:
/// an effect performed inside a `withLock` stops the suite at once.)
@Suite(.offPool) struct LockCheckTests {
    @Test("each thread counts the Locked locks it holds, nested ones too, and none once they are let go")
    func depth() async throws {
        #if DEBUG
        let first = Locked(0), second = Locked(0)
        #expect(baton_lock_depth(0) == 0)
        first.withLock { _ in
            #expect(baton_lock_depth(0) == 1)
            second.withLock { _ in #expect(baton_lock_depth(0) == 2) }
            #expect(baton_lock_depth(0) == 1)
        }
        #expect(baton_lock_depth(0) == 0)
        // A throw out of the body lets the count go too.
        struct Thrown: Error {}
        #expect(throws: Thrown.self) { try first.withLock { _ in throw Thrown() } }
        #expect(baton_lock_depth(0) == 0)
        // Another thread's lock is not this thread's.
        let held = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            first.withLock { _ in
                held.signal()
                release.wait()
            }
            done.signal()
        }
        held.wait()
        #expect(baton_lock_depth(0) == 0)
        release.signal()
        done.wait()
        #endif
    }
}
