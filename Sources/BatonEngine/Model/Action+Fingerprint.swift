/// The fingerprint of an action's definition, which the hosts of a fleet compare: two hosts
/// that give one name different commands must not share each other's runs.
extension Action {
    /// 16 hex digits of FNV-1a (64 bits) over a canonical encoding of what the action runs and
    /// how a trigger meets its runs: exec, cwd, env, user, umask, timeout, killGrace, leftovers,
    /// policy, policies, retry, params (pattern and default), keyParams, onInterrupt, tty, and (where set) secretParams, queueDepth, rateLimit,
    /// needs and approve. Each
    /// value is length-prefixed and maps and sets are sorted, so the same definition gives the
    /// same fingerprint on every host and in every release, and the order of a config's fields
    /// does not matter. `description`, `retention` and `allow` are left out: they change neither
    /// what runs nor which runs meet. Not cryptographic (no OpenSSL in the build): it tells honest
    /// configs apart; whoever can write one host's config can run anything there anyway.
    public var fingerprint: String {
        var encoder = FingerprintEncoder()
        encoder.add("exec", exec)
        encoder.add("cwd", [cwd ?? "\u{0}"])
        encoder.add("env", env.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] })
        encoder.add("user", [runAs?.user ?? "\u{0}"])
        encoder.add("umask", [umask.map { String($0, radix: 8) } ?? "\u{0}"])
        encoder.add("timeout", [timeout.map(Self.text) ?? "\u{0}"])
        encoder.add("killGrace", [Self.text(killGrace)])
        encoder.add("leftovers", [leftovers.rawValue])
        encoder.add("policy", [policy.rawValue])
        encoder.add("policies", policies.map(\.rawValue).sorted())
        encoder.add("retry", [String(retry.attempts), Self.text(retry.backoff), Self.text(retry.maxBackoff)])
        encoder.add("params", params.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value.pattern?.source ?? "\u{0}", $0.value.defaultValue ?? "\u{0}"] })
        encoder.add("keyParams", keyParams)
        encoder.add("onInterrupt", [onInterrupt.rawValue])
        // Only when set, so that the fingerprints of actions without it stay what they were.
        if tty { encoder.add("tty", ["true"]) }
        if !secretParams.isEmpty { encoder.add("secretParams", secretParams) }
        if queueDepth != 1 { encoder.add("queueDepth", [String(queueDepth)]) }
        if let rate = rateLimit { encoder.add("rateLimit", [String(rate.runs), Self.text(rate.per), rate.scope.rawValue, rate.over.rawValue]) }
        if !needs.isEmpty {
            encoder.add("needs", needs.flatMap { [$0.action.name] + $0.params.sorted { $0.key < $1.key }.flatMap { [$0.key, $0.value] } + ["\u{0}"] })
        }
        if let approve {
            // Who may approve (as written, in any order), how long a run waits, whether its trigger may.
            encoder.add("approve", approve.by.sorted() + ["\u{0}", approve.timeout.map(Self.text) ?? "\u{0}", String(approve.allowsSelf)])
        }
        return encoder.hex
    }

    private static func text(_ duration: Duration) -> String {
        "\(duration.components.seconds).\(duration.components.attoseconds)"
    }
}

/// FNV-1a 64 (`FNV1a`) over fields written as `tag`, a count, then each value's byte length and
/// bytes: no two different lists of fields encode alike.
struct FingerprintEncoder {
    private var hash = FNV1a()

    mutating func add(_ tag: String, _ values: [String]) {
        write(tag)
        write(String(values.count))
        for value in values { write(value) }
    }

    private mutating func write(_ text: String) {
        hash.add(String(text.utf8.count).utf8)
        hash.add(CollectionOfOne(UInt8(ascii: ":")))
        hash.add(text.utf8)
    }

    var hex: String {
        let digits = String(hash.value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
