import BatonCore
import BatonIPC

extension DashboardServer {
    /// A page's stream of a run's output, from its `Last-Event-ID` on: batond's `output` op,
    /// following, on a connection of its own, so that the page going (or being dropped as too slow
    /// to read, past the server's stream buffer) closes it and batond stops its follower. Nothing
    /// is held here: each chunk goes out as it comes.
    func openOutput(_ exchange: HTTPExchange, run: Int64, lastEventID: String?, user: String?) {
        guard let from = OutputEvents.resumePosition(lastEventID) else {
            return exchange.answer(refusal(400, "Last-Event-ID must be a position in the run's output (decimal digits)"))
        }
        let key = ObjectIdentifier(exchange)
        let admitted = outputStreams.access { streams -> Bool in
            guard streams.count < limits.maxOutputStreams else { return false }
            streams[key] = exchange
            return true
        }
        guard admitted else { return exchange.answer(refusal(503, "too many output streams; close a run's tab")) }
        let channel = Channel(path: api.channel.path, reactor: reactor)
        exchange.stream(head: SSE.head(extra: Assets.securityFields.map { ($0.name, $0.value) })) { [weak self] in
            _ = self?.outputStreams.access { $0.removeValue(forKey: key) }
            channel.close()
        }
        channel.call(Request(op: .output, run: run, from: from, follow: true).acting(user), events: { response, _ in
            if let chunk = response.chunk { exchange.send(OutputEvents.chunk(chunk)) }
        }, done: { result in
            switch result {
            case let .success(response):
                if let error = response.error {
                    exchange.send(OutputEvents.refused(error.message))
                } else {
                    exchange.send(OutputEvents.end(phase: response.run?.phase, position: response.outputEnd, dropped: response.outputDropped))
                }
            case let .failure(failure):
                exchange.send(OutputEvents.offline(failure.message))
            }
            exchange.end()
            channel.close()
        })
    }
}
