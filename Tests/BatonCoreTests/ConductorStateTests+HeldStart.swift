@testable import BatonCore
@testable import BatonEngine
import Testing

/// A start held while its `loading` is written (write-ahead): the paths that end it before its
/// process exists (cancel, timeout, replace, a failed commit) launch nothing, then or later.
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

    @Test("a cancel while the start is held ends the run at once, with no process to signal; the later commit launches nothing")
    func cancelWhileHeld() throws {
        var (h, loading) = try Self.held()
        h.on(.cancel(2, .run(1), by: 1000))
        #expect(h.phases == [.cancelled])
        #expect(!Self.stops(h.effects), "no process to stop: \(h.effects)")
        h.on(.committed(loading, nil))
        #expect(h.launches.isEmpty)
    }

    @Test("a failed loading commit launches nothing; the attempt counts as failed, and flaky retries")
    func failedCommitWhileHeld() throws {
        var (h, loading) = try Self.held()
        h.on(.committed(loading, .storeUnavailable("full")))
        #expect(h.launches.isEmpty)
        #expect(h.phases == [.retrying], "\(h.effects)")
    }

    @Test("a timeout while a retry's start is held (armed at the first attempt) ends the run failure, reason timeout, at once; the later commit launches nothing")
    func timeoutWhileHeld() throws {
        var h = Harness()
        h.trigger(1, Self.flaky)
        try h.commitStarting()
        #expect(h.launches == [1])
        h.on(.exited(run: 1, attempt: 1, AttemptOutcome(result: .exited(status: 1))))
        #expect(h.phases == [.retrying])
        h.on(.committed(try #require(h.commit()), nil))
        h.on(.timer(run: 1, .backoff(1)))
        #expect(h.phases == [.loading])
        let loading = try #require(h.loadingCommit)
        #expect(h.launches.isEmpty, "attempt 2 is held")
        h.on(.timer(run: 1, .timeout))
        #expect(h.phases == [.failure])
        guard case let .transition(end)? = h.written.last else { Issue.record("\(h.effects)"); return }
        #expect(end.detail.reason == "timeout")
        #expect(!Self.stops(h.effects), "no process to stop: \(h.effects)")
        h.on(.committed(loading, nil))
        #expect(h.launches.isEmpty)
    }

    @Test("replaced while its start is held: the old run ends at once with nothing to stop and never launches; the new run launches once its own loading is durable")
    func replacedWhileHeld() throws {
        var h = Harness()
        h.trigger(1, Self.replacing)
        h.on(.committed(try #require(h.commit()), nil))
        let held = try #require(h.loadingCommit)
        #expect(h.launches.isEmpty)
        h.trigger(2, Self.replacing)
        #expect(h.phases.contains(.cancelled), "run 1 ends at once: \(h.effects)")
        #expect(!Self.stops(h.effects), "run 1 has no process: \(h.effects)")
        var writes: [(ConductorState.CommitID, [JournalEntry])] = []
        for case let .write(entries, id) in h.effects { writes.append((id, entries)) }
        h.on(.committed(held, nil))
        #expect(h.launches.isEmpty, "run 1 was replaced while held")
        var launched: [Int64] = []
        while !writes.isEmpty {
            let (id, entries) = writes.removeFirst()
            h.on(.committed(id, nil))
            for case let .write(more, next) in h.effects { writes.append((next, more)) }
            for run in h.launches {
                launched.append(run)
                let ownLoading = entries.contains { if case let .transition(t) = $0 { t.runID == run && t.to == .loading } else { false } }
                #expect(ownLoading, "run \(run) launched by a commit without its loading: \(entries)")
            }
        }
        #expect(launched == [2])
    }
}
