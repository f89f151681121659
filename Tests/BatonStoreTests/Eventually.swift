import Foundation
import Testing

/// The one poll of BatonStoreTests, for state that no event announces (a counter the store's
/// writer keeps on its own thread). (EndToEndTests and BatonCoreTests hold the same helper, with
/// its synchronous forms: test targets share no source.)
///
/// It asks again with backoff, 1 ms doubling up to 100 ms, until the condition holds or `within`
/// seconds pass; then it records an issue that names what it waited for and answers false, so a
/// test that waited for X still fails when X does not happen, and says which X.
enum Eventually {
    /// Polls `condition` until it holds, napping with `Task.sleep` (the pool's threads stay free);
    /// records an issue naming `what` if it never does.
    @discardableResult
    static func untilAwaited(_ what: @autoclosure () -> String, within seconds: Double = 30,
                             sourceLocation: SourceLocation = #_sourceLocation,
                             _ condition: () async throws -> Bool) async rethrows -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        var nap = Duration.milliseconds(1)
        while true {
            if try await condition() { return true }
            if ContinuousClock.now >= deadline { break }
            try? await Task.sleep(for: nap)
            nap = min(nap * 2, .milliseconds(100))
        }
        Issue.record(Comment(rawValue: "not within \(seconds) s: \(what())"), sourceLocation: sourceLocation)
        return false
    }
}
