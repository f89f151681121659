import BatonIPC

/// Decides, from a request's head alone, whether the dashboard serves it: the checks that make
/// a web server on a machine that runs deploys safe to leave open in a browser tab. In order:
///
/// 1. One `Host`, naming this server (a DNS-rebinding page's requests carry its own name).
/// 2. A known path (404), with its one method (405).
/// 3. Everything but the page's own files and the sign-in needs a live session in
///    `Authorization: Bearer` (401). Never a cookie: a browser sends cookies for 127.0.0.1 to every
///    port of it, so another local user's server would receive one; a header is sent only by the
///    page's own script, from its origin's storage.
/// 4. For POST: `Origin` must be this server (CSRF), the body JSON and at most `bodyLimit` bytes.
public struct Gate: Sendable {
    /// The `Host` values this server answers to: its address, and `localhost` for a loopback one;
    /// for a wildcard listen address, each of the machine's addresses instead.
    public var hosts: Set<String>
    /// The address to open the dashboard at: the listen address, or for a wildcard one the first
    /// of the machine's addresses that is not loopback (else loopback).
    public var address: ListenAddress
    public var bodyLimit: Int

    public enum Decision: Equatable, Sendable {
        case serve(Route)
        case refuse(status: Int, reason: String, allow: String? = nil)
    }

    /// The gate of a server listening on `address`; a wildcard one answers to the machine's
    /// addresses as they are now (getifaddrs).
    public init(address: ListenAddress, bodyLimit: Int = 16_384) {
        self.init(address: address, machineAddresses: address.isWildcard ? address.machineAddresses() : [], bodyLimit: bodyLimit)
    }

    /// The gate of a server listening on `address`, where a wildcard address stands for
    /// `machineAddresses` (numeric, of its family; ignored for any other address). `0.0.0.0` itself
    /// is no name to open a page at.
    public init(address: ListenAddress, machineAddresses: [String], bodyLimit: Int = 16_384) {
        self.bodyLimit = bodyLimit
        let names = address.isWildcard ? machineAddresses : [address.host]
        var hosts = Set(names.map { ListenAddress(host: $0, port: address.port).description })
        let isLoopback = { (name: String) in ListenAddress(host: name, port: 0).isLoopback }
        if names.contains(where: isLoopback) { hosts.insert("localhost:\(address.port)") }
        self.hosts = hosts
        let loopback = address.host.contains(":") ? "::1" : "127.0.0.1"
        let shown = address.isWildcard ? names.first { !isLoopback($0) } ?? loopback : address.host
        self.address = ListenAddress(host: shown, port: address.port)
    }

    /// `proxied`: the team's dashboard behind a trusted proxy (`ProxyGate` admitted the peer and
    /// named the user): the proxy signed the page in, not a session, and the `Host` is the proxy's
    /// public name, which `Origin` must match.
    public func decide(_ head: HTTPRequestHead, sessions: Sessions, proxied: Bool = false) -> Decision {
        // The parser refuses these already (RFC 9112 §3.2); the gate does not lean on it.
        guard head.fields.count(where: { $0.name == "host" }) <= 1 else { return .refuse(status: 400, reason: "more than one Host field") }
        let hosts = proxied ? Set(head.field("host").map { [$0.lowercased()] } ?? []) : hosts
        guard let host = head.field("host"), hosts.contains(host.lowercased()) else {
            return .refuse(status: 421, reason: "this is the Baton dashboard at \(hosts.sorted().joined(separator: " or ")), not \(head.field("host") ?? "(no Host)")")
        }
        guard let (route, method) = Route.of(path: head.path) else { return .refuse(status: 404, reason: "no such page: \(head.path)") }
        guard head.method == method || (method == "GET" && head.method == "HEAD" && !route.isStream) else {
            return .refuse(status: 405, reason: "\(head.path) takes \(method)", allow: method == "GET" ? "GET, HEAD" : method)
        }
        if route.needsSession, !proxied {
            guard let token = Self.bearer(in: head), sessions.admits(token) else {
                return .refuse(status: 401, reason: "this page is not signed in: open an address `baton dashboard` printed (press Enter where it runs for a new one)")
            }
        }
        if route.changesState {
            let origin = head.field("origin")
            guard let origin, hosts.contains(where: { origin == "http://\($0)" || (proxied && origin == "https://\($0)") }) else {
                return .refuse(status: 403, reason: "a request that changes something must come from the dashboard's own page (Origin: \(origin ?? "none"))")
            }
            guard head.field("content-type")?.lowercased().hasPrefix("application/json") == true else {
                return .refuse(status: 415, reason: "send JSON (Content-Type: application/json)")
            }
            if head.field("transfer-encoding") != nil { return .refuse(status: 411, reason: "send the body with a Content-Length") }
            guard let text = head.field("content-length"), !text.isEmpty, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
                return .refuse(status: 411, reason: "send the body with a Content-Length")
            }
            // Digits past any Int are a body past the limit too.
            guard let length = Int(text), length <= bodyLimit else { return .refuse(status: 413, reason: "the body is larger than \(bodyLimit) bytes") }
        }
        return .serve(route)
    }

    /// The token of the one `Authorization: Bearer …` field; nil when there is none, or more than one.
    static func bearer(in head: HTTPRequestHead) -> String? {
        let fields = head.fields.filter { $0.name == "authorization" }
        guard fields.count == 1 else { return nil }
        let value = fields[0].value
        guard value.count > 7, value.prefix(7).lowercased() == "bearer " else { return nil }
        return String(value.dropFirst(7))
    }
}
