import BatonCore
import BatonIPC
import BatonService

extension Daemon {
    /// The webhook listener, when the config has `webhooks`: its address is fixed at start, its
    /// hooks follow reloads. Socket-activated when systemd passes a TCP socket named `webhooks`.
    static func startWebhooks(_ config: Config, _ service: Service, _ box: ConfigBox, _ backend: Backend) throws -> Parts.Stop {
        guard let webhooks = config.webhooks else { return {} }
        let listener = WebhookListener(service: service, store: backend.deliveries, webhooks: { box.current.webhooks })
        var limits = HTTPServer.Limits()
        limits.bodyBytes = webhooks.maxBody
        // A forge's deliveries all come from "another host": each uid share is theirs together.
        limits.maxConnectionsPerPeer = 32
        let server: HTTPServer
        do {
            let handler: HTTPServer.Handler = { head, exchange in listener.handle(head, exchange) }
            // batond-webhooks.socket's, when systemd passed it (then `listen` only documents it).
            if let passed = SocketActivation.passed.webhooks {
                server = try HTTPServer(descriptor: passed, limits: limits, handler: handler)
            } else {
                server = try HTTPServer(listening: webhooks.listen, limits: limits, handler: handler)
            }
        } catch {
            throw DaemonError("cannot take webhooks on \(webhooks.listen): \(error)")
        }
        server.start()
        Log.info("webhooks: \(webhooks.hooks.count) hook\(webhooks.hooks.count == 1 ? "" : "s") at http://\(server.address)/hooks/")
        return { server.stop() }
    }
}
