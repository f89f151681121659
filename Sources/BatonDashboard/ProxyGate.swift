import BatonCore
import BatonIPC
import Glibc

/// The team's dashboard behind a trusted proxy (issue 42, item 5): the proxy (oauth2-proxy, nginx
/// `auth_request`) signs people in and names each request's user in `userHeader`; the dashboard
/// believes that header only from a TCP peer in `trusted`, and asks batond `as` that user.
public struct ProxyGate: Sendable, Equatable {
    /// The proxies' addresses (`10.0.0.0/8`, `127.0.0.1`, `::1/128`).
    public var trusted: [AddressRange]
    /// The field the proxy names the user in, lowercased (fields' names are read lowercased).
    public var userHeader: String
    /// The field the proxy lists the user's groups in, comma-separated (oauth2-proxy's
    /// `X-Forwarded-Groups`), lowercased: read for the map's `group:` rules, from a trusted proxy only.
    public var groupsHeader: String
    /// The users a proxy on this machine runs as (`--proxy-user`: nginx's `www-data`). A peer on
    /// this machine is believed only when the kernel says its socket is one of theirs: every
    /// local user may send from any loopback or local address (`curl --interface 127.0.0.2`), so
    /// an address alone names no one here. A peer on another host is believed by its address.
    public var proxyUsers: Set<UInt32>

    public init(trusted: [AddressRange], userHeader: String = "x-forwarded-user", groupsHeader: String = "x-forwarded-groups",
                proxyUsers: Set<UInt32> = []) {
        self.trusted = trusted
        self.userHeader = userHeader.lowercased()
        self.groupsHeader = groupsHeader.lowercased()
        self.proxyUsers = proxyUsers
    }

    /// The user field every dashboard refuses from a peer it does not trust, proxy or none.
    public static let defaultHeader = "x-forwarded-user"

    public enum Decision: Equatable, Sendable {
        /// Serve as this user.
        case user(String)
        case refuse(status: Int, reason: String)
    }

    /// Whose request this is: the user a trusted proxy named, validated; a request from any other
    /// peer is refused (with the field: 403, a forgery; without: 403 too, since the listener serves
    /// only through its proxy), as is one from the proxy that names no user (401) or no valid name (403: not 1 to 128 bytes of
    /// printable ASCII without spaces or commas, refused before the map is read).
    /// `peerUID`: the owner of the peer's socket where it is on this machine (nil: another host).
    /// `map`: the user map (`--user-map`), which turns the proxy's names into accounts or group
    /// principals (`UserMap.principal`); a name it does not map is served as today when it is
    /// an account name, refused (403, naming the map) otherwise.
    public func decide(_ head: HTTPRequestHead, peer: String?, peerUID: UInt32?, map: UserMap? = nil) -> Decision {
        let values = head.fields.filter { $0.name == userHeader }.map(\.value)
        guard let peer, trusted.contains(where: { $0.contains(peer) }) else {
            if !values.isEmpty { return .refuse(status: 403, reason: "\(userHeader) is believed only from the dashboard's trusted proxies, not from \(peer ?? "an unknown address")") }
            return .refuse(status: 403, reason: "this dashboard is served through its sign-in proxy only; \(peer ?? "an unknown address") is not one")
        }
        if let uid = peerUID, !proxyUsers.contains(uid) {
            return .refuse(status: 403, reason: "a proxy on this machine is believed only as the user it runs as (--proxy-user): uid \(uid) is not it")
        }
        guard values.count == 1, let name = values.first else {
            return .refuse(status: values.isEmpty ? 401 : 400, reason: values.isEmpty ? "the proxy named no user (\(userHeader))" : "more than one \(userHeader) field")
        }
        // Before the map is read: one name of printable ASCII (a comma joins two fields' values), its bytes lower-cased once.
        guard Request.isPrincipalName(name), !name.utf8.contains(UInt8(ascii: ",")) else {
            return .refuse(status: 403, reason: "\(userHeader): \(Action.quoted(UserMap.sanitized(String(name.prefix(40))))) is not one name "
                + "of 1 to \(Request.maxPrincipalLength) bytes of printable ASCII without spaces or commas")
        }
        let lowered = UserMap.asciiLowered(name)
        // The groups only where a rule may ask for them: read from the proxy now believed.
        // One field only, as for the user's: a second would come from whoever could add one (a client the proxy passes through).
        let groupFields = map?.hasGroupRules == true ? head.fields.filter { $0.name == groupsHeader }.map(\.value) : []
        guard groupFields.count <= 1 else { return .refuse(status: 400, reason: "more than one \(groupsHeader) field") }
        let groups = Self.groups(groupFields)
        switch map?.target(lowered: lowered, groups: groups) {
        case let .account(account)?: return .user(account)
        // The person as the map matched them: one name whatever case the proxy gives it in.
        case let .group(group)?: return .user(UserMap.principal(String(decoding: lowered, as: UTF8.self), group: group))
        case nil: break
        }
        guard Request.isUserName(name) else {
            let rules = map.map { "no rule of \($0.source) maps it" } ?? "map it to an account or group with --user-map"
            return .refuse(status: 403, reason: "\(userHeader): \(Action.quoted(String(name.prefix(40)))) is no user name of this machine's shape (\(rules))")
        }
        return .user(name)
    }

    /// The most groups read from a request; those past it are not matched.
    public static let maxGroups = 256

    /// The groups a proxy listed (its field's value, comma-separated; `decide` refuses two fields), ASCII
    /// lower-cased, spaces around each trimmed; a group that is not 1 to
    /// `UserMap.maxPattern` bytes of printable ASCII without spaces is left out.
    public static func groups(_ values: [String]) -> [[UInt8]] {
        var groups: [[UInt8]] = []
        for value in values {
            for part in value.split(separator: ",") {
                var bytes = UserMap.asciiLowered(String(part))[...]
                while let first = bytes.first, first == 32 || first == 9 { bytes.removeFirst() }
                while let last = bytes.last, last == 32 || last == 9 { bytes.removeLast() }
                guard !bytes.isEmpty, bytes.count <= UserMap.maxPattern, bytes.allSatisfy({ $0 > 32 && $0 < 127 }) else { continue }
                groups.append(Array(bytes))
                if groups.count == maxGroups { return groups }
            }
        }
        return groups
    }

    /// A dashboard without a proxy (one user, one-time codes) serves this machine only: a peer on
    /// loopback or at one of `machine`'s addresses (a browser here that opened the machine's own
    /// address), nil then; anyone else is refused, as is the user field from anyone (nothing
    /// believes it there).
    public static func unproxied(_ head: HTTPRequestHead, peer: String?, machine: Set<String>) -> Decision? {
        guard head.field(defaultHeader) == nil else {
            return .refuse(status: 403, reason: "\(defaultHeader) is believed only behind a trusted proxy (baton dashboard --trusted-proxy)")
        }
        let bare = peer.map { $0.lowercased().hasPrefix("::ffff:") && $0.contains(".") ? String($0.dropFirst(7)) : $0 }
        guard let bare, bare.hasPrefix("127.") || bare == "::1" || machine.contains(bare) else {
            return .refuse(status: 403, reason: "this dashboard serves this machine only (\(peer ?? "an unknown address") is not on it): "
                + "reach it through an SSH tunnel, or serve a team behind a sign-in proxy (--trusted-proxy)")
        }
        return nil
    }
}

/// A block of IPv4 or IPv6 addresses, `ADDRESS/BITS` (or one address).
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    let bytes: [UInt8]
    let bits: Int
    public let description: String

    /// The block's prefix length, and whether it is IPv4.
    public var prefixLength: Int { bits }
    public var isIPv4: Bool { bytes.count == 4 }

    /// `10.0.0.0/8`, `192.0.2.7`, `::1`, `fd00::/8`; nil for anything else (a name, a mask past the
    /// address's width, host bits set).
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = Self.parse(String(parts[0])) else { return nil }
        let width = address.count * 8
        let bits = parts.count == 2 ? Int(parts[1]) : width
        guard let bits, (0...width).contains(bits), parts.count == 1 || parts[1].allSatisfy(\.isASCIIDigit) else { return nil }
        guard Self.prefix(address, bits) == address else { return nil }
        self.bytes = address
        self.bits = bits
        description = text
    }

    /// Whether a numeric address is in the block (an IPv4-mapped IPv6 peer counts as its IPv4 address).
    public func contains(_ address: String) -> Bool {
        guard var parsed = Self.parse(address) else { return false }
        if parsed.count == 16, bytes.count == 4, parsed.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] { parsed = Array(parsed.suffix(4)) }
        return parsed.count == bytes.count && Self.prefix(parsed, bits) == bytes
    }

    static func prefix(_ address: [UInt8], _ bits: Int) -> [UInt8] {
        address.enumerated().map { index, byte in
            let kept = min(max(bits - index * 8, 0), 8)
            return kept == 0 ? 0 : byte & UInt8(truncatingIfNeeded: 0xff << (8 - kept))
        }
    }

    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: v6) { Array($0) } }
        return nil
    }
}
