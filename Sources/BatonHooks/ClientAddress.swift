/// Who sent a webhook request: the TCP peer, or, when that peer is a trusted reverse proxy,
/// the address it says it forwarded for.
public enum ClientAddress {
    /// The sender's address. `X-Forwarded-For` is read only when `peer` is in `trusted` (or
    /// `peerTrusted`: a proxy on this host known by its user, whatever its address): from
    /// its right end (what the nearest proxy appended), past every trusted proxy, the first
    /// address is the client's, without the port a proxy may have written after it. A value that
    /// is no numeric address stops the walk there, and the last trusted hop is the answer (a
    /// client may write anything at the left).
    public static func of(peer: String?, forwardedFor fields: [String], trusted: Set<String>, peerTrusted: Bool = false) -> String {
        guard let peer else { return "unknown" }
        guard trusted.contains(peer) || peerTrusted, !fields.isEmpty else { return peer }
        let hops = fields.flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces() }
        var client = peer
        for written in hops.reversed() {
            guard let hop = host(of: written) else { return client }
            client = hop
            if !trusted.contains(hop) { return hop }
        }
        return client
    }

    /// A hop's numeric address without the port a proxy may write after it (`10.0.0.5:8080`,
    /// `[2001:db8::1]:443`, `[::1]`); nil when it is no numeric address. An IPv6 address has no
    /// port unless bracketed: `2001:db8::1` is taken whole.
    static func host(of hop: String) -> String? {
        var host = Substring(hop)
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            guard after.isEmpty || isPort(after.dropFirst()) && after.hasPrefix(":") else { return nil }
            host = host[host.index(after: host.startIndex)..<close]
            guard host.contains(":") else { return nil }
        } else if host.contains("."), let colon = host.firstIndex(of: ":"), host.lastIndex(of: ":") == colon {
            guard isPort(host[host.index(after: colon)...]) else { return nil }
            host = host[..<colon]
        }
        return isNumeric(String(host)) ? String(host) : nil
    }

    /// One to five digits.
    static func isPort(_ text: Substring) -> Bool {
        (1...5).contains(text.utf8.count) && text.utf8.allSatisfy { $0 >= 48 && $0 <= 57 }
    }

    /// Digits, hex, dots and colons only, of an address's length: enough to keep anything else
    /// (a name, a port, spaces, quotes) out of the record.
    static func isNumeric(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 45 && text.contains(where: { $0 == "." || $0 == ":" })
            && text.utf8.allSatisfy { ($0 >= 48 && $0 <= 58) || $0 == 46 || ($0 >= 97 && $0 <= 102) || ($0 >= 65 && $0 <= 70) }
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
