import BatonCore

/// The team's dashboard's user map (`baton dashboard --user-map FILE`): how the names a sign-in
/// proxy gives (e-mail addresses, a provider's names) become this machine's accounts, or, for
/// people without one, a local group whose access rules they get. One rule a line, first match wins:
///
///     # comment (a whole line, or after the rule)
///     alice@example.org   alice          # this person is the account alice
///     *@example.org       group:staff    # everyone else at example.org: a member of staff
///     group:ops@example.org  group:wheel # whom no name rule maps, in the proxy's group ops@…
///
/// A pattern is the proxy's name, `*` standing for any run of characters, matched without
/// regard to ASCII case; the target is an account name or `group:NAME`. A pattern that starts
/// with `group:` matches the groups the proxy lists (`--groups-header`, `X-Forwarded-Groups`)
/// instead, and is asked only when no name rule matched: the first such rule that one of the
/// person's groups matches wins; its target is a group (an account would leave the history
/// naming the account, not the person: refused). `group:` is read in any ASCII case. Pure: parsing and
/// matching only; the file is read by the command, at start and on SIGHUP.
public struct UserMap: Sendable, Equatable {
    public enum Target: Sendable, Equatable {
        case account(String)
        case group(String)
    }

    public struct Rule: Sendable, Equatable {
        public var pattern: String
        public var target: Target
        public var line: Int
        /// Whether the pattern matches the proxy's groups (`group:PATTERN`) rather than the name.
        public var group: Bool = false
    }

    /// Whether a rule matches on the proxy's groups (the gate reads them only then).
    public var hasGroupRules: Bool { rules.contains(where: \.group) }

    public var rules: [Rule]
    /// Where the rules came from, to name in a refusal.
    public var source: String

    public init(rules: [Rule] = [], source: String = "") {
        self.rules = rules
        self.source = source
    }

    /// The most rules a map holds, and the longest pattern.
    public static let maxRules = 10_000
    public static let maxPattern = 256

    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var source: String
        public var description: String { "\(source):\(line): \(message)" }
    }

    /// The rules of a map file's text; a bad line throws naming its number.
    public static func parse(_ text: String, source: String) throws(ParseError) -> UserMap {
        var rules: [Rule] = []
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = index + 1
            let content = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let words = content.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if words.isEmpty { continue }
            guard words.count == 2 else {
                throw ParseError(line: line, message: "expected a pattern and a target (alice@example.org alice, *@example.org group:staff), got \(words.count) words", source: source)
            }
            // `group:` in any ASCII case: `Group:admins` is a group rule, never a name rule for that name.
            let group = hasGroupPrefix(words[0]) && words[0].count > 6
            let pattern = String(group ? words[0].dropFirst(6) : words[0]), target = String(words[1])
            guard pattern.utf8.count <= maxPattern, pattern.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
                throw ParseError(line: line, message: "the pattern is not 1 to \(maxPattern) bytes of printable ASCII", source: source)
            }
            let resolved = try Self.target(target, line: line, source: source)
            // An account for a whole group would be all the history says: who acted would be lost.
            if group, case .account = resolved {
                throw ParseError(line: line, message: "a group: rule's target is group:NAME, not an account (\(target)): the history would name "
                    + "the account, not the person; map the person by name, or the group to a local group", source: source)
            }
            rules.append(Rule(pattern: String(decoding: asciiLowered(pattern), as: UTF8.self), target: resolved, line: line, group: group))
            guard rules.count <= maxRules else { throw ParseError(line: line, message: "more than \(maxRules) rules", source: source) }
        }
        return UserMap(rules: rules, source: source)
    }

    private static func target(_ text: String, line: Int, source: String) throws(ParseError) -> Target {
        if hasGroupPrefix(text[...]) {
            let name = String(text.dropFirst(6))
            guard Request.isUserName(name) else { throw ParseError(line: line, message: "group:\(name) names no group of this machine's shape", source: source) }
            return .group(name)
        }
        guard Request.isUserName(text) else {
            throw ParseError(line: line, message: "\(Action.quoted(String(text.prefix(40)))) is no account name (or group:NAME)", source: source)
        }
        return .account(text)
    }

    /// Whether a word starts with `group:`, in any ASCII case.
    static func hasGroupPrefix(_ word: Substring) -> Bool {
        word.utf8.count >= 6 && asciiLowered(String(word.prefix(6))) == Array("group:".utf8)
    }

    /// The first rule's target whose pattern the name matches, without regard to ASCII case
    /// only (Unicode's would map the Kelvin sign to `k`); nil when none does.
    public func target(for name: String) -> Target? {
        target(lowered: Self.asciiLowered(name))
    }

    /// The same, for a name's bytes already ASCII-lower-cased (`asciiLowered`).
    public func target(lowered name: [UInt8]) -> Target? {
        rules.first { !$0.group && Self.matches(Array($0.pattern.utf8), name) }?.target
    }

    /// The name's target (`target(lowered:)`); where no name rule matches, the first `group:`
    /// rule's that one of `groups` (ASCII-lower-cased, as `ProxyGate.groups` gives them) matches.
    public func target(lowered name: [UInt8], groups: [[UInt8]]) -> Target? {
        if let target = target(lowered: name) { return target }
        guard !groups.isEmpty else { return nil }
        return rules.first { rule in rule.group && groups.contains { Self.matches(Array(rule.pattern.utf8), $0) } }?.target
    }

    /// A name's bytes with `A`-`Z` lower-cased, every other byte as it is.
    public static func asciiLowered(_ name: String) -> [UInt8] {
        name.utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
    }

    /// Glob matching with `*` only (any run, also empty): linear, with one backtrack point.
    static func matches(_ pattern: [UInt8], _ name: [UInt8]) -> Bool {
        var p = 0, n = 0, star = -1, mark = 0
        let asterisk = UInt8(ascii: "*")
        while n < name.count {
            if p < pattern.count, pattern[p] == asterisk {
                star = p; mark = n; p += 1
            } else if p < pattern.count, pattern[p] == name[n] {
                p += 1; n += 1
            } else if star >= 0 {
                p = star + 1; mark += 1; n = mark
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == asterisk { p += 1 }
        return p == pattern.count
    }

    /// A proxy's name as the history keeps it: printable ASCII (anything else as `?`), at most
    /// `Request.maxPrincipalLength` bytes.
    public static func sanitized(_ name: String) -> String {
        String(decoding: name.utf8.prefix(Request.maxPrincipalLength).map { $0 > 32 && $0 < 127 ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// The dashboard's user for a group principal: `group:staff:alice@example.org` (an account name
    /// has no colon), split again by `Request.acting` when it asks batond.
    public static func principal(_ name: String, group: String) -> String { "group:\(group):\(name)" }
}

extension Request {
    /// This request asked as the dashboard's user: an account (`as`), or a group principal
    /// (`UserMap.principal`: `as` the person's name and `asGroup` their group); nil: as itself.
    public func acting(_ user: String?) -> Request {
        var request = self
        request.actingAs = user
        request.asGroup = nil
        if let user, user.hasPrefix("group:") {
            let parts = user.dropFirst(6).split(separator: ":", maxSplits: 1)
            if parts.count == 2 { (request.asGroup, request.actingAs) = (String(parts[0]), String(parts[1])) }
        }
        return request
    }
}
