import BatonCore
import BatonHooks
import BatonIPC
import FoundationEssentials
import Glibc

extension ConfigReader {
    private static let webhookFields: Set<String> = ["listen", "trustedProxies", "maxBody", "hooks"]
    private static let hookFields: Set<String> = ["action", "secret", "signature", "params", "rateLimit", "events", "when"]

    /// `webhooks: { listen: "127.0.0.1:9470", trustedProxies: ["127.0.0.1"], hooks: { … } }`;
    /// each hook is checked against `actions` (its action, and the params it fills).
    mutating func webhooks(_ value: JSONValue, actions: [Action]) -> WebhookConfig? {
        let path = "webhooks"
        guard let fields = object(value, at: path, allowed: Self.webhookFields) else { return nil }
        guard let listen = fields["listen"] else {
            fail(path + ".listen", "missing: the address to take POST /hooks/NAME on, such as \"127.0.0.1:9470\"")
            return nil
        }
        guard let text = string(listen, at: path + ".listen") else { return nil }
        let address: ListenAddress
        switch ListenAddress.parse(text) {
        case let .success(parsed): address = parsed
        case let .failure(error):
            fail(path + ".listen", error.description)
            return nil
        }
        var config = WebhookConfig(listen: address)
        if let value = fields["maxBody"] {
            config.maxBody = integer(value, at: path + ".maxBody", min: 1, max: WebhookConfig.maxBodyLimit) ?? config.maxBody
        }
        if let value = fields["trustedProxies"] {
            for (index, proxy) in (stringArray(value, at: path + ".trustedProxies") ?? []).enumerated() {
                let here = "\(path).trustedProxies[\(index)]"
                if proxy.hasPrefix("user:") {
                    if let uid = userID(String(proxy.dropFirst(5)), at: here) { config.proxyUsers.insert(uid) }
                } else if Self.isNumericAddress(proxy) {
                    config.trustedProxies.insert(proxy)
                } else {
                    fail(here, "expected a numeric IPv4 or IPv6 address, or \"user:NAME\" for a proxy on this host, got \(Action.quoted(proxy))")
                }
            }
        }
        guard let hooksValue = fields["hooks"] else {
            fail(path + ".hooks", "missing: the hooks by name, such as { \"github-deploy\": { action: \"deploy\", … } }")
            return nil
        }
        guard case let .object(hooks) = hooksValue else {
            fail(path + ".hooks", "expected an object of hooks by name, got \(hooksValue.kind)")
            return nil
        }
        let byName = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        for (name, value) in hooks.sorted(by: { $0.key < $1.key }) {
            if let hook = hook(name, value, at: "\(path).hooks.\(name)", actions: byName) { config.hooks[name] = hook }
        }
        return config
    }

    private mutating func hook(_ name: String, _ value: JSONValue, at path: String, actions: [String: Action]) -> Hook? {
        if !Hook.isValidName(name) { fail(path, "a hook name is 1 to 64 letters, digits, '-', '_' or '.' (it is a path segment)") }
        guard let fields = object(value, at: path, allowed: Self.hookFields) else { return nil }
        var action: Action?
        if let value = fields["action"], let named = string(value, at: path + ".action") {
            action = actions[named]
            if action == nil { fail(path + ".action", "no action named \(Action.quoted(named)) (the actions: \(actions.keys.sorted().joined(separator: ", ")))") }
        } else if fields["action"] == nil {
            fail(path + ".action", "missing: the action the hook presses")
        }
        var scheme: SignatureScheme?
        if let value = fields["signature"] {
            scheme = choice(value, at: path + ".signature", SignatureScheme.allCases.map(\.rawValue)).flatMap(SignatureScheme.init(rawValue:))
        } else {
            fail(path + ".signature", "missing: how requests are signed, one of \(SignatureScheme.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let secret = fields["secret"].flatMap { self.secret($0, at: path + ".secret") }
        if fields["secret"] == nil { fail(path + ".secret", "missing: { file: \"/etc/baton/hooks/\(name).secret\" } or { credential: \"NAME\" }") }
        let params = fields["params"].map { self.hookParams($0, at: path + ".params", action: action) } ?? [:]
        let rateLimit = fields["rateLimit"].flatMap { self.rateLimit($0, at: path + ".rateLimit") }
        let events = fields["events"].map { self.hookEvents($0, at: path + ".events") }
        let when = fields["when"].map { self.hookConditions($0, at: path + ".when") } ?? []
        guard let action, let scheme, let secret else { return nil }
        // A param's pattern is the action's: kept with the hook, so a value it refuses is ignored before the press
        // (and logged, quoted: a secret's is left to the action's check, which refuses it without quoting it).
        let rules = HookRules(events: events ?? DeliveryEvent.defaults(scheme), when: when,
                              patterns: params.keys.reduce(into: [:]) { $0[$1] = action.params[$1].flatMap { $0.secret ? nil : $0.pattern } })
        return Hook(name: name, action: action.name, secret: secret, signature: scheme, params: params, rateLimit: rateLimit, rules: rules)
    }

    /// `{ env: "/ref" }`: each a param the action declares, with a JSON Pointer into the body.
    private mutating func hookParams(_ value: JSONValue, at path: String, action: Action?) -> [String: JSONPointer] {
        guard let texts = stringMap(value, at: path) else { return [:] }
        var params: [String: JSONPointer] = [:]
        for (name, text) in texts.sorted(by: { $0.key < $1.key }) {
            if let action, action.params[name] == nil {
                let known = action.params.keys.sorted()
                fail("\(path).\(name)", "action \(action.name) has no param \(name)" + (known.isEmpty ? " (it takes none)" : " (it takes: \(known.joined(separator: ", ")))"))
            }
            do {
                params[name] = try JSONPointer(text)
            } catch {
                fail("\(path).\(name)", "\(error.description), such as \"/ref\" or \"/repository/full_name\"")
            }
        }
        return params
    }

    /// `{ requests: 30, per: "1m" }`.
    private mutating func rateLimit(_ value: JSONValue, at path: String) -> Hook.RateLimit? {
        guard let fields = object(value, at: path, allowed: ["requests", "per"]) else { return nil }
        guard let requestsValue = fields["requests"], let perValue = fields["per"] else {
            fail(path, "expected { requests: N, per: DURATION }, such as { requests: 30, per: \"1m\" }")
            return nil
        }
        guard let requests = integer(requestsValue, at: path + ".requests", min: 1, max: 100_000),
              let per = positiveDuration(perValue, at: path + ".per") else { return nil }
        return Hook.RateLimit(requests: requests, per: per)
    }

    /// Whether `text` is a numeric IPv4 or IPv6 address (what a peer's address is compared with).
    static func isNumericAddress(_ text: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, text, &buffer) == 1 || inet_pton(AF_INET6, text, &buffer) == 1
    }
}
