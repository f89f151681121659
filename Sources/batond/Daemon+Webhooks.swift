import BatonCore
import BatonIPC
import BatonService

extension Daemon {
    /// The webhook listener, when the config has `webhooks`: its address is fixed at start, its
    /// hooks follow reloads.
    static func startWebhooks(_ config: Config, _ service: Service, _ box: ConfigBox, _ backend: Backend) throws -> Parts.Stop {
        guard let webhooks = config.webhooks else { return {} }
        let listener = WebhookListener(service: service, store: backend.deliveries, webhooks: { box.current.webhooks })
        var limits = HTTPServer.Limits()
        limits.bodyBytes = webhooks.maxBody
        // A forge's deliveries all come from "another host": each uid share is theirs together.
        limits.maxConnectionsPerPeer = 32
        let server: HTTPServer
        do {
            server = try HTTPServer(listening: webhooks.listen, limits: limits) { head, exchange in listener.handle(head, exchange) }
        } catch {
            throw DaemonError("cannot take webhooks on \(webhooks.listen): \(error)")
        }
        server.start()
        Log.info("webhooks: \(webhooks.hooks.count) hook\(webhooks.hooks.count == 1 ? "" : "s") at http://\(server.address)/hooks/")
        return { server.stop() }
    }
}
