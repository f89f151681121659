import BatonCore

/// The JSON of the snapshot the loop last wrote for each run (issue 39): a trigger's answer, a
/// wait's events and final answer, and each watcher's update carry the same snapshot of a run
/// (the engine hands out its fields shared: a `RunSnapshot` is one reference to fields never written),
/// and each writes it once. Only the loop uses the memo; a line made elsewhere (an answer from
/// the read driver) writes its snapshot itself.
final class RenderedRuns: Sendable {
    /// Runs kept at most: past it the memo starts again (a snapshot it no longer holds is written
    /// again, nothing else). A run's final answer takes its own out.
    static let bound = 1024

    private let reactor: Reactor
    private let memo: LoopOwned<IDMap<Int64, RenderedRun>>

    init(reactor: Reactor) {
        self.reactor = reactor
        memo = LoopOwned([:], on: reactor)
    }

    /// `run`'s bytes where they are kept (and, `last`, no longer: the run's final answer), else
    /// nil: the line writes it, and a later one does not need it (`last`) or finds it kept.
    /// Nil off the loop.
    func rendering(of run: RunSnapshot, last: Bool = false) -> RenderedRun? {
        guard reactor.isCurrent else { return nil }
        return memo.access { memo in
            if last { return memo.removeValue(forKey: run.id).flatMap { $0.isRendering(of: run) ? $0 : nil } }
            if let kept = memo[run.id], kept.isRendering(of: run) { return kept }
            if memo.count >= Self.bound { memo.removeAll(keepingCapacity: true) }
            let rendered = RenderedRun(run)
            memo[run.id] = rendered
            return rendered
        }
    }

    /// The response as one line, its run's snapshot written once (`last`: the run's final answer,
    /// after which its bytes are let go).
    func line(_ response: Response, last: Bool = false) -> [UInt8] {
        response.jsonLine(rendered: response.run.flatMap { rendering(of: $0, last: last) })
    }

    /// An update event as one line, its run's snapshot written once.
    func updateLine(_ id: RequestID?, _ update: RunUpdate) -> [UInt8] {
        Response.updateLine(id, update, rendered: rendering(of: update.run))
    }
}
