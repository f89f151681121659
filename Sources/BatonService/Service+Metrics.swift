import BatonCore
import FoundationEssentials

extension Service {
    /// Everything: for `GET /metrics`, which whoever configured the listener chose to expose.
    public func metricsReport() -> MetricsReport {
        var report = MetricsReport(counts: metrics.counts, actions: generation.sortedActions.map(\.name), live: conductor.inFlight(),
                                   storeUnavailable: journal.unavailableReason != nil, connections: hooks.connections(),
                                   version: BatonVersion.current, process: ProcessStats.current())
        report.paused = Set(conductor.pauses().keys)
        return report
    }

    /// The `metrics` operation: the same text, without the actions the peer may not read.
    func metrics(_ request: Request, _ generation: Generation, _ peer: Peer) -> Response {
        var response = Response(id: request.id)
        response.metrics = metricsReport().only { allowed(.read, $0, generation, peer) }.text
        return response
    }
}
