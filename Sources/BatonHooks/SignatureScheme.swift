import BatonIPC

/// How a hook's requests prove they come from whoever holds its secret.
public enum SignatureScheme: String, Sendable, CaseIterable {
    /// `X-Hub-Signature-256: sha256=HEX`, HMAC-SHA256 of the raw body: GitHub, Gitea, Forgejo.
    case github
    /// `X-Gitlab-Token: SECRET`, the secret itself, compared in constant time.
    case gitlab
    /// `X-Baton-Signature: t=UNIX,v1=HEX`, HMAC-SHA256 of `t.body`, within `window` of now.
    case hmacSHA256 = "hmac-sha256"

    /// How far a `hmac-sha256` timestamp may be from now, either way.
    public static let window: Int64 = 300

    /// Whether the request is signed with `secret`. Every failure is the same `false`: the caller
    /// never learns (nor tells) which part was wrong.
    public func verify(_ head: HTTPRequestHead, body: [UInt8], secret: Secret, now: Int64) -> Bool {
        switch self {
        case .github:
            guard let value = head.only("x-hub-signature-256"), value.hasPrefix("sha256="),
                  let given = HMAC.bytes(hex: value.dropFirst(7)) else { return false }
            return HMAC.equal(given, HMAC.sha256(key: secret.bytes, message: body))
        case .gitlab:
            guard let token = head.only("x-gitlab-token") else { return false }
            // Both sides through the HMAC first: the comparison then takes the same time whatever
            // the token's length, which says nothing about the secret's.
            let key = secret.bytes
            return HMAC.equal(HMAC.sha256(key: key, message: Array(token.utf8)), HMAC.sha256(key: key, message: key))
        case .hmacSHA256:
            guard let value = head.only("x-baton-signature"), let (time, macs) = Self.timestamped(value),
                  abs(now - time) <= Self.window else { return false }
            let expected = HMAC.sha256(key: secret.bytes, message: Array("\(time).".utf8) + body)
            // Every v1 is compared (a sender rotating its secret sends two): no early exit on a match.
            return macs.reduce(false) { found, mac in HMAC.equal(mac, expected) || found }
        }
    }

    /// The `t=` and `v1=` parts of an `X-Baton-Signature` value: one time, one or more MACs.
    static func timestamped(_ value: String) -> (Int64, [[UInt8]])? {
        var time: Int64?
        var macs: [[UInt8]] = []
        for part in value.split(separator: ",", omittingEmptySubsequences: false) {
            let part = part.drop { $0 == " " }
            if part.hasPrefix("t="), time == nil {
                let digits = part.dropFirst(2)
                guard !digits.isEmpty, digits.count <= 12, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
                time = Int64(digits)
            } else if part.hasPrefix("v1=") {
                guard let mac = HMAC.bytes(hex: part.dropFirst(3)), mac.count == HMAC.length else { return nil }
                macs.append(mac)
            } else {
                return nil
            }
        }
        guard let time, !macs.isEmpty, macs.count <= 4 else { return nil }
        return (time, macs)
    }

    /// The header value that signs `body` at `time` for `hmac-sha256` (what a sender computes).
    public static func batonSignature(_ body: [UInt8], secret: Secret, time: Int64) -> String {
        "t=\(time),v1=" + HMAC.hex(HMAC.sha256(key: secret.bytes, message: Array("\(time).".utf8) + body))
    }
}
