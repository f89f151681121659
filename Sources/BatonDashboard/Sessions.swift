/// Who may use the dashboard, as a value: the one-time sign-in codes it has handed out and the
/// sessions browsers traded them for.
///
/// A code travels where others may see it (a terminal, a file a browser is started on); it is
/// worth one exchange within `codeLifetime` and nothing after. A session token travels only in
/// the exchange's answer and in each request's `Authorization: Bearer` field: the page keeps it
/// in its own origin's storage (scheme, host and port), so no request a browser makes to another
/// port or host ever carries it — unlike a cookie, which every port of 127.0.0.1 receives.
///
/// Pure: the caller supplies the random texts and the time, so every rule is table-tested.
public struct Sessions: Sendable {
    /// How long a code may wait for its exchange.
    public static let codeLifetime: Duration = .seconds(60)
    /// Codes not yet used and not yet expired; the oldest is dropped beyond this.
    public static let maxCodes = 16
    /// Sessions kept; the oldest is signed out beyond this.
    public static let maxSessions = 64

    struct Code: Sendable {
        var text: String
        var expires: ContinuousClock.Instant
        /// The session this code was traded for, once it has been.
        var session: String?
    }

    var codes: [Code] = []
    var tokens: [String] = []

    public init() {}

    public enum Redemption: Equatable, Sendable {
        case session(String)
        /// The code was used before, within its life: whoever used it first may have read it
        /// over the owner's shoulder, so the session it made is signed out too.
        case reused(revoked: String)
        case expired
        case unknown
    }

    /// Hands out `code`, good until `now + codeLifetime`.
    public mutating func issue(code: String, now: ContinuousClock.Instant) {
        forgetExpired(now)
        codes.append(Code(text: code, expires: now + Self.codeLifetime))
        let unused = codes.indices.filter { codes[$0].session == nil }
        if unused.count > Self.maxCodes { codes.remove(at: unused[0]) }
    }

    /// Trades `code` for the session `token` (a fresh random text from the caller), once.
    public mutating func redeem(code given: String, token: String, now: ContinuousClock.Instant) -> Redemption {
        let match = codes.firstIndex { Self.same($0.text, given) }
        guard let match else { return .unknown }
        guard codes[match].expires > now else {
            codes.remove(at: match)
            return .expired
        }
        if let made = codes[match].session {
            tokens.removeAll { $0 == made }
            codes.remove(at: match)
            return .reused(revoked: made)
        }
        codes[match].session = token
        tokens.append(token)
        if tokens.count > Self.maxSessions { tokens.removeFirst() }
        forgetExpired(now)
        return .session(token)
    }

    /// Whether `token` is a live session; compared with every one in constant time.
    public func admits(_ token: String) -> Bool {
        var found = false
        for live in tokens { found = Self.same(live, token) || found }
        return found
    }

    /// Drops the codes past their life: an unused one is worthless, a used one can no longer be
    /// reused (its session stays).
    mutating func forgetExpired(_ now: ContinuousClock.Instant) {
        codes.removeAll { $0.expires <= now }
    }

    /// Compares in time that does not depend on where the texts differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let a = Array(a.utf8), b = Array(b.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
