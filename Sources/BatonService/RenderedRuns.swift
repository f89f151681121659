import BatonCore

/// The JSON of the snapshot the loop last wrote for each run (issue 39): a trigger's answer, a
/// wait's events and final answer, and each watcher's update carry the same snapshot of a run
/// (the engine hands out its fields shared until they change: `RunSnapshot` is copy on write),
/// and each writes it once. Only the loop uses the memo; a line made elsewhere (an answer from
/// the read driver) writes its snapshot itself.
final class RenderedRuns: Sendable {
    /// Runs kept at most: past it the memo starts again (a snapshot it no longer holds is written
    /// again, nothing else). A run's final answer lets its own go.
    static let bound = 1024

    private let reactor: Reactor
    private let memo: LoopOwned<[Int64: RenderedRun]>

    init(reactor: Reactor) {
        self.reactor = reactor
        memo = LoopOwned([:], on: reactor)
    }

    /// `run`'s bytes: those kept for it where they are of its fields, else written now and kept.
    /// Nil off the loop.
    func rendering(of run: RunSnapshot) -> RenderedRun? {
        guard reactor.isCurrent else { return nil }
        return memo.access { memo in
            if let kept = memo[run.id], kept.isRendering(of: run) { return kept }
            if memo.count >= Self.bound { memo.removeAll(keepingCapacity: true) }
            let rendered = RenderedRun(run)
            memo[run.id] = rendered
            return rendered
        }
    }

    /// The response as one line, its run's snapshot written once.
    func line(_ response: Response) -> [UInt8] {
        response.jsonLine(rendered: response.run.flatMap(rendering(of:)))
    }

    /// An update event as one line, its run's snapshot written once.
    func updateLine(_ id: RequestID?, _ update: RunUpdate) -> [UInt8] {
        Response.updateLine(id, update, rendered: rendering(of: update.run))
    }

    /// The run's final answer is out: what was kept for it goes.
    func forget(_ run: Int64) {
        guard reactor.isCurrent else { return }
        memo.access { $0[run] = nil }
    }
}
