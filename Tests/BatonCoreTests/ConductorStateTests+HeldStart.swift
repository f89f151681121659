@testable import BatonCore
@testable import BatonEngine
import Testing

/// A start held while its `loading` is written (write-ahead).
extension ConductorStateTests {
    /// A state that hands over, run 1 (of `flaky`, which survives restarts) decided to start, its loading being written.
    static func held() throws -> (Harness, ConductorState.CommitID) {
        var h = Harness()
        h.state = ConductorState(maxConcurrentRuns: 4, seed: 1)
        h.state.handsOver = true
        h.trigger(1, Self.flaky)
        h.on(.committed(try #require(h.commit()), nil))
        #expect(h.phases == [.loading])
        #expect(h.launches.isEmpty)
        return (h, try #require(h.loadingCommit))
    }

    static func stops(_ effects: [ConductorState.Effect]) -> Bool {
        effects.contains { if case .stop = $0 { true } else { false } }
    }
}
