import BatonIPC

/// Decides, from a request's head alone, whether the dashboard serves it: the checks that make
/// a web server on a machine that runs deploys safe to leave open in a browser tab. In order:
///
/// 1. `Host` must name this server (a DNS-rebinding page's requests carry its own name).
/// 2. The token: the `baton_dashboard` cookie, or `?token=` on `GET /`, which is exchanged for the
///    cookie (`HttpOnly`, `SameSite=Strict`) by a redirect that drops it from the address bar.
/// 3. A known path (404), with its one method (405).
/// 4. For POST: `Origin` must be this server (CSRF), the body JSON and at most `bodyLimit` bytes.
public struct Gate: Sendable {
    public static let cookieName = "baton_dashboard"

    public var token: String
    /// The `Host` values this server answers to: its address, and `localhost` for a loopback one.
    public var hosts: Set<String>
    public var bodyLimit: Int

    public enum Decision: Equatable, Sendable {
        case serve(Route)
        /// The token came in the address: set the cookie and send the browser to the clean address.
        case exchange(location: String)
        case refuse(status: Int, reason: String, allow: String? = nil)
    }

    public init(token: String, address: ListenAddress, bodyLimit: Int = 16_384) {
        self.token = token
        self.bodyLimit = bodyLimit
        var hosts: Set<String> = [address.description]
        if address.host == "127.0.0.1" { hosts.insert("localhost:\(address.port)") }
        if address.host == "::1" { hosts.insert("localhost:\(address.port)") }
        self.hosts = hosts
    }

    public func decide(_ head: HTTPRequestHead) -> Decision {
        guard let host = head.field("host"), hosts.contains(host.lowercased()) else {
            return .refuse(status: 421, reason: "this is the Baton dashboard at \(hosts.sorted().joined(separator: " or ")), not \(head.field("host") ?? "(no Host)")")
        }
        let cookie = Self.cookie(Self.cookieName, in: head)
        let given = QueryString.decode(head.query ?? "").first { $0.name == "token" }?.value
        if let given {
            // Traded at `GET /` only, and always for a clean address, with or without a cookie already.
            guard matchesToken(given) else {
                return .refuse(status: 401, reason: "the token is not this dashboard's; open the address `baton dashboard` printed")
            }
            guard head.path == "/", head.method == "GET" else {
                return .refuse(status: 401, reason: "the token is traded for a cookie at / only; open the address `baton dashboard` printed")
            }
            return .exchange(location: "/")
        }
        guard cookie.map(matchesToken) == true else {
            return .refuse(status: 401, reason: "open the address `baton dashboard` printed (it carries the token)")
        }
        guard let (route, method) = Route.of(path: head.path) else { return .refuse(status: 404, reason: "no such page: \(head.path)") }
        guard head.method == method || (method == "GET" && head.method == "HEAD" && route != .events) else {
            return .refuse(status: 405, reason: "\(head.path) takes \(method)", allow: method == "GET" ? "GET, HEAD" : method)
        }
        if route.changesState {
            let origin = head.field("origin")
            guard let origin, hosts.contains(where: { origin == "http://\($0)" }) else {
                return .refuse(status: 403, reason: "a request that changes something must come from the dashboard's own page (Origin: \(origin ?? "none"))")
            }
            guard head.field("content-type")?.lowercased().hasPrefix("application/json") == true else {
                return .refuse(status: 415, reason: "send JSON (Content-Type: application/json)")
            }
            if head.field("transfer-encoding") != nil { return .refuse(status: 411, reason: "send the body with a Content-Length") }
            guard let length = head.field("content-length").flatMap({ Int($0) }), length >= 0 else {
                return .refuse(status: 411, reason: "send the body with a Content-Length")
            }
            guard length <= bodyLimit else { return .refuse(status: 413, reason: "the body is larger than \(bodyLimit) bytes") }
        }
        return .serve(route)
    }

    /// Compares in time that does not depend on where the texts differ.
    func matchesToken(_ given: String) -> Bool {
        let a = Array(given.utf8), b = Array(token.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// A cookie's value from the `Cookie` fields (`a=1; b=2`).
    static func cookie(_ name: String, in head: HTTPRequestHead) -> String? {
        for field in head.fields where field.name == "cookie" {
            for pair in field.value.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingSpaces == name { return String(parts[1].trimmingSpaces) }
            }
        }
        return nil
    }

    /// The `Set-Cookie` value that carries the token: never readable by scripts, never sent by
    /// another site's page, gone when the browser closes.
    public var cookieField: HTTPRequestHead.Field {
        .init(name: "Set-Cookie", value: "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict")
    }
}

extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
