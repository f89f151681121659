import BatonCore

/// One webhook of the config: `POST /hooks/NAME` presses `action`, signed by `signature` with
/// `secret`, with params taken from the JSON body, for the deliveries its `rules` take.
public struct Hook: Sendable, Equatable {
    public var name: String
    public var action: String
    public var secret: Secret
    public var signature: SignatureScheme
    /// Each param's place in the body, by param name.
    public var params: [String: JSONPointer]
    /// At most this many requests per `per` (a token bucket that holds `requests`); nil: no limit.
    public var rateLimit: RateLimit?
    /// Which deliveries press the action; the others are ignored (202, no run).
    public var rules: HookRules

    /// A rate: `requests` per `per`.
    public struct RateLimit: Sendable, Equatable {
        public var requests: Int
        public var per: Duration
        public init(requests: Int, per: Duration) {
            self.requests = requests
            self.per = per
        }
    }

    public init(name: String, action: String, secret: Secret, signature: SignatureScheme, params: [String: JSONPointer] = [:],
                rateLimit: RateLimit? = nil, rules: HookRules? = nil) {
        self.name = name
        self.action = action
        self.secret = secret
        self.signature = signature
        self.params = params
        self.rateLimit = rateLimit
        // nil: the scheme's defaults (a forge's pushes; every request of one's own).
        self.rules = rules ?? HookRules(for: signature)
    }

    /// The token that reads run `run` of this hook at its status URL: HMAC-SHA256 of the hook's
    /// name and the run under the secret, so it needs no storage and opens that run only.
    public func statusToken(run: Int64) -> String {
        HMAC.hex(HMAC.sha256(key: secret.bytes, message: Array("baton-status \(name) \(run)".utf8)))
    }

    /// The names a hook may have: they are a path segment.
    public static func isValidName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= Action.maxNameLength && name.utf8.allSatisfy { byte in
            (byte >= 97 && byte <= 122) || (byte >= 65 && byte <= 90) || (byte >= 48 && byte <= 57) || byte == 45 || byte == 95 || byte == 46
        } && name != "." && name != ".."
    }
}
