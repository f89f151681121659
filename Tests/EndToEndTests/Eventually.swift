import Foundation
import Testing

/// The one poll of the tests, for state that no event announces: a row another process writes,
/// `/proc`, an answer batond gives only when asked, a counter a worker keeps on its own thread.
/// Where an event exists (batond's log, `baton wait`, a watch stream, a FIFO the action opens, a
/// probe's stream) a test waits on that instead. Test targets share no module: BatonCoreTests and
/// BatonStoreTests compile this file through a link to it.
///
/// It asks again with backoff, 1 ms doubling up to 100 ms, until the condition holds or `within`
/// seconds pass; then it records an issue that names what it waited for (and, for `value`, what it
/// last saw) and answers false (or the last value seen), so a test that waited for X still fails
/// when X does not happen, and says which X.
///
/// One report per wait: `until`, `untilAwaited` and `value` record the issue themselves, so a
/// caller never wraps them in `#expect` or `#require` (that reported twice) nor throws when they
/// answer false; a test that cannot go on stops with `guard Eventually.until(…) else { return }`.
/// `held` records nothing, for a helper that throws its own error and for a thread of a test's
/// own, where an issue would not reach the test: the caller reports what it answers.
enum Eventually {
    /// Polls `condition` until it holds; records an issue naming `what` if it never does.
    @discardableResult
    static func until(_ what: @autoclosure () -> String, within seconds: Double = 30,
                      sourceLocation: SourceLocation = #_sourceLocation,
                      _ condition: () throws -> Bool) rethrows -> Bool {
        let (_, held) = try poll(seconds, condition) { $0 }
        if !held { Issue.record(Comment(rawValue: "not within \(seconds) s: \(what())"), sourceLocation: sourceLocation) }
        return held
    }

    /// Polls `probe` until `accept` takes what it answers, and returns that; records an issue
    /// naming `what` and the last answer if none is taken in time, and returns the last answer.
    @discardableResult
    static func value<T>(_ what: @autoclosure () -> String, within seconds: Double = 30,
                         sourceLocation: SourceLocation = #_sourceLocation,
                         _ probe: () throws -> T, until accept: (T) throws -> Bool) rethrows -> T {
        let (seen, held) = try poll(seconds, probe, accept)
        if !held {
            Issue.record(Comment(rawValue: "not within \(seconds) s: \(what()); last saw \(String(reflecting: seen))"),
                         sourceLocation: sourceLocation)
        }
        return seen
    }

    /// `until` for a condition that awaits; it naps with `Task.sleep`, so the tasks it waits on
    /// (a watch's, the conductor's) keep a thread of the pool.
    @discardableResult
    static func untilAwaited(_ what: @autoclosure () -> String, within seconds: Double = 30,
                             sourceLocation: SourceLocation = #_sourceLocation,
                             _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var nap = Duration.milliseconds(1)
        while true {
            if try await condition() { return true }
            // Cancelled (a time limit), `Task.sleep` returns at once: no spinning on to the deadline.
            if ContinuousClock.now >= deadline || Task.isCancelled { break }
            try? await Task.sleep(for: min(nap, deadline - .now))
            nap = min(nap * 2, .milliseconds(100))
        }
        Issue.record(Comment(rawValue: "not within \(seconds) s: \(what())"), sourceLocation: sourceLocation)
        return false
    }

    /// Waits for `semaphore` (signalled by a thread the test does not own: a store's worker, an
    /// action) on a thread of its own, never one of the cooperative pool's, which the tests share:
    /// an async test that blocks a pool thread on a semaphore starves the very task that would
    /// signal it when other suites hold the rest (SearchBoundTests.ownConnection under load).
    /// Records an issue naming `what` if it is not signalled within `seconds`.
    @discardableResult
    static func signalled(_ what: @autoclosure () -> String, _ semaphore: DispatchSemaphore, within seconds: Double = 30,
                          sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        let got = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: semaphore.wait(timeout: .now() + seconds) == .success) }
        }
        if !got { Issue.record(Comment(rawValue: "not within \(seconds) s: \(what())"), sourceLocation: sourceLocation) }
        return got
    }

    /// Polls `condition` until it holds or `seconds` pass, and answers whether it held; records nothing.
    static func held(within seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
        try poll(seconds, condition) { $0 }.1
    }

    private static func poll<T>(_ seconds: Double, _ probe: () throws -> T, _ accept: (T) throws -> Bool) rethrows -> (T, Bool) {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var nap = Duration.milliseconds(1)
        while true {
            let seen = try probe()
            if try accept(seen) { return (seen, true) }
            if ContinuousClock.now >= deadline { return (seen, false) }
            // No nap past the deadline: the last probe is taken at it, not up to a nap later.
            usleep(UInt32(max(min(nap, deadline - .now), .zero) / .microseconds(1)))
            nap = min(nap * 2, .milliseconds(100))
        }
    }
}
