import BatonCore
import BatonHooks
import BatonIPC
import Glibc
import BatonService

extension Daemon {
    /// The webhook listener, when the config has `webhooks` or systemd passed a TCP socket named
    /// `webhooks` (batond-webhooks.socket): its address is fixed at start, its hooks follow reloads.
    static func startWebhooks(_ config: Config, _ serving: Serving, _ box: ConfigBox, _ backend: Backend) throws -> Parts.Stop {
        let service = serving.service
        let passed = SocketActivation.passed.webhooks ?? ownWebhooks(config.webhooks?.listen)
        guard config.webhooks != nil || passed != nil else { return {} }
        // libcrypto is opened here, not linked: a host without it says so now, not at a first request.
        try HMAC.load()
        if config.webhooks == nil {
            // Left unserved, the socket would hold every request in its queue for ever (systemd
            // keeps it open): each is answered 404 instead, until a reload adds hooks.
            Log.warning("systemd passed a webhooks socket (batond-webhooks.socket), but the config has no webhooks: requests there get 404")
        }
        let reactor = backend.conductor.reactor
        let listener = WebhookListener(service: service, store: backend.deliveries, reactor: reactor, webhooks: { box.current.webhooks })
        let handler: HTTPServer.Handler = { head, exchange in listener.handle(head, exchange) }
        let server = try webhookServer(config.webhooks, passed: passed, kept: { box.current.webhooks?.keptPeers ?? [.unknown] },
                                       reactor: reactor, handler: handler)
        serving.webhooks.set(server)
        serving.hooks.set(listener)
        server.start()
        let hooks = config.webhooks?.hooks.count ?? 0
        Log.info("webhooks: \(hooks) hook\(hooks == 1 ? "" : "s") at http://\(server.address)/hooks/")
        return { server.stop() }
    }

    /// The webhook socket the batond before a restart in place bound itself, where `listen` still
    /// names its address (port 0: any; the hosts compared as parsed addresses, so `::0001` in the
    /// config is the `::1` the kernel reports); else it is closed, and `listen` bound anew.
    static func ownWebhooks(_ listen: ListenAddress?) -> Int32? {
        guard let fd = SocketActivation.passed.ownWebhooks else { return nil }
        if let listen, let bound = TCPPeer.localAddress(of: fd), bound.sameHost(as: listen), listen.port == 0 || listen.port == bound.port {
            return fd
        }
        close(fd)
        return nil
    }

    /// The listener's HTTP server: on the socket systemd passed (then `listen` only documents it),
    /// else bound to `listen`.
    /// Its 64 connections: at most 32 per peer (a uid, or every peer on another host together, a
    /// forge's deliveries all among them); the last 16 kept for the senders (`WebhookConfig.keptPeers`),
    /// never for batond's own uid; a local user outside them has 2 seconds to send its whole
    /// request, since a signature is checked only once the body is in.
    static func webhookServer(_ webhooks: WebhookConfig?, passed: Int32?, kept: @escaping @Sendable () -> Set<PeerAdmission.Peer>,
                              reactor: Reactor, handler: @escaping HTTPServer.Handler) throws -> HTTPServer {
        var limits = HTTPServer.Limits()
        limits.bodyBytes = webhooks?.maxBody ?? WebhookConfig.defaultMaxBody
        limits.maxConnectionsPerPeer = 32
        limits.owners = []
        limits.kept = kept
        limits.requestTimeout = .seconds(2)
        if let passed {
            do { return try HTTPServer(descriptor: passed, limits: limits, reactor: reactor, handler: handler) } catch {
                throw DaemonError("cannot take webhooks on the socket systemd passed (fd \(passed)): \(error)")
            }
        }
        guard let webhooks else { throw DaemonError("cannot take webhooks: no webhooks.listen and no socket passed") }
        do { return try HTTPServer(listening: webhooks.listen, limits: limits, reactor: reactor, handler: handler) } catch {
            throw DaemonError("cannot take webhooks on \(webhooks.listen): \(error)")
        }
    }
}
