/// Turns a secret param's value into the text its run's key holds: a keyed hash (batond: the
/// first 16 bytes of HMAC-SHA256 under a key kept in its state directory, as hex), so that two
/// triggers with the same value share a key and different values do not, while the value
/// itself is never stored. Given by whoever can compute one (the engine has no cryptography).
public struct SecretSealer: Sendable {
    /// The key's text for `value` of param `param` of action `action`; throws when no key can
    /// be had (its file unreadable, libcrypto missing).
    public let seal: @Sendable (_ action: String, _ param: String, _ value: String) throws(BatonError) -> String

    public init(_ seal: @escaping @Sendable (_ action: String, _ param: String, _ value: String) throws(BatonError) -> String) {
        self.seal = seal
    }
}

/// A trigger's params split for keeping: what the history, the key and every answer may see,
/// and the secret values the run's process gets (kept in memory only, with the run in flight).
public struct SealedParams: Sendable, Equatable {
    /// The params with every secret's value replaced by `Action.maskedValue`.
    public var params: [String: String]
    /// The single-flight key: secret key params by their sealed text.
    public var key: String
    /// The secret params' values, by name.
    public var secrets: [String: String]
}

extension Action {
    /// What a secret param's value is shown and kept as.
    public static let maskedValue = "***"

    /// The names of the params declared `secret: true`, sorted.
    public var secretParams: [String] { params.filter(\.value.secret).keys.sorted() }

    /// Resolved params split for keeping (`SealedParams`). Throws `internal` when the action has
    /// a secret param and there is no sealer to make its key with.
    public func seal(_ resolved: [String: String], with sealer: SecretSealer?) throws(BatonError) -> SealedParams {
        let secret = secretParams
        guard !secret.isEmpty else { return SealedParams(params: resolved, key: key(for: resolved), secrets: [:]) }
        guard let sealer else { throw .internalError("action \(name) has secret params, and no key to hash them with") }
        var shown = resolved
        var keyed = resolved
        var secrets: [String: String] = [:]
        for param in secret {
            guard let value = resolved[param] else { continue }
            secrets[param] = value
            shown[param] = Self.maskedValue
            keyed[param] = try sealer.seal(name, param, value)
        }
        return SealedParams(params: shown, key: key(for: keyed), secrets: secrets)
    }
}
