import BatonCore
import BatonIPC
import BatonService

extension Daemon {
    /// Serves `GET /metrics` (and HEAD) at `address` when the config asks for it; anything else
    /// gets 404, or 405 for another method. Nil when not configured.
    static func serveMetrics(_ address: ListenAddress?, _ service: Service, reactor: Reactor) throws(SocketError) -> HTTPServer? {
        guard let address else { return nil }
        let server = try HTTPServer(listening: address, reactor: reactor, answer: { head in
            guard head.path == "/metrics" else { return .refusal(404, "only /metrics is served here") }
            guard head.method == "GET" || head.method == "HEAD" else {
                return .refusal(405, "only GET and HEAD", extraFields: [.init(name: "Allow", value: "GET, HEAD")])
            }
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                body: Array(service.metricsReport().text.utf8))
        })
        server.start()
        Log.info("metrics: serving http://\(server.address)/metrics")
        return server
    }
}
