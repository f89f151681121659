import BatonHooks
import BatonIPC

/// `webhooks: { listen, trustedProxies, maxBody, hooks }`: the HTTP listener that presses
/// actions for forges, CI and bots (issue 27). The listen address changes at restart only; the
/// hooks, their secrets and the proxies are read again on reload.
struct WebhookConfig: Sendable, Equatable {
    var listen: ListenAddress
    /// Peers whose `X-Forwarded-For` is believed (a reverse proxy in front), as numeric addresses.
    var trustedProxies: Set<String> = []
    /// Local users whose connections are a trusted proxy's (`"user:www-data"` in
    /// `trustedProxies`), as uids looked up at load: their `X-Forwarded-For` is believed, and the
    /// connections kept from other local users are theirs (with the peers on other hosts).
    var proxyUsers: Set<UInt32> = []

    /// The peers the listener's last connections are kept for: peers on other hosts and the
    /// proxies' users, never batond's own uid, which sends no webhooks.
    var keptPeers: Set<PeerAdmission.Peer> { Set(proxyUsers.map { .uid($0) }).union([.unknown]) }
    /// The largest body taken, in bytes.
    var maxBody = Self.defaultMaxBody
    /// The hooks by name.
    var hooks: [String: Hook] = [:]

    /// The pure decision over these hooks.
    var gate: HookGate { HookGate(hooks: hooks, bodyLimit: maxBody) }

    /// `maxBody` when the config does not say.
    static let defaultMaxBody = 256 << 10

    /// The largest `maxBody` accepted: a hook's body is held whole while its signature is checked.
    static let maxBodyLimit = 16 << 20
}
