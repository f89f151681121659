import BatonCore

/// A request's `as`: the team's dashboard (running as batond's user, or root) asks on behalf of the
/// user a trusted proxy named, and batond decides every access check as for that user's account.
extension Service {
    /// Serves a request with `as` (on the loop): refused unless the connection's peer is root or
    /// batond's own user; otherwise the name is looked up on the lookup thread (NSS may block),
    /// and the request is served as that account (its uid, primary gid and groups), or refused
    /// when the machine has no such user: never with the asking peer's own rights. The
    /// connection's later requests wait behind it, as behind a group lookup. True when it waits.
    func actFor(_ request: Request, _ connection: any Caller, _ generation: Generation) -> Bool {
        let exchange = Exchange(request: request, connection: connection)
        let peer = connection.peer
        guard let name = request.actingAs, peer.uid == 0 || peer.uid == generation.owner else {
            exchange.fail(.forbidden("\(described(peer)) may not ask as another user (`as`): only root and batond's own user may"))
            return false
        }
        // `ping` says only what batond is (its version): served to the peer itself, so that a dashboard can
        // ask at start whether batond takes `as` from it (refused above otherwise), whatever it names.
        if request.op == .ping {
            var plain = request
            plain.actingAs = nil
            serve(plain, Exchange(request: plain, connection: connection), generation, connection)
            return false
        }
        // A group principal is looked up as its group (`group:staff`, a key no account name can be).
        let key = request.asGroup.map { "group:\($0)" } ?? name
        let missing = request.asGroup.map { "no group \($0) on this machine: a request made as a member of it gets nothing" }
            ?? "no user \(name) on this machine: a request made as \(name) gets nothing"
        // Read within `groupsKept`: served now, on the loop (the account's groups are cached with it;
        // a name the machine has no user for is kept too, so that one stranger does not hold the
        // lookup thread every team member's requests wait on).
        if let cached = cachedAccount(key) {
            guard let user = cached else {
                exchange.fail(.forbidden(missing))
                return false
            }
            if user.uid == Peer.groupPrincipalUID || !needsGroupLookup(Peer(uid: user.uid, gid: user.gid, pid: peer.pid), generation) {
                serve(request, as: user, connection, generation)
                return false
            }
        }
        let waiting = ObjectIdentifier(connection)
        behindLookup.access { $0[waiting] = $0[waiting] ?? [] }
        let reactor = reactor, accounts = accounts
        lookups.submit { [self] in
            let user = accounts(key)
            reactor.post { [self] in
                actingCache.access { cache in
                    if cache.count > 10_000 { cache.removeAll() }
                    cache[key] = (user, .now)
                }
                if let user {
                    if user.uid != Peer.groupPrincipalUID { remember(user.groups, name: user.name, of: user.uid) }
                    serve(request, as: user, connection, generation)
                } else {
                    exchange.fail(.forbidden(missing))
                }
                takeWaiting(from: connection)
            }
        }
        return true
    }

    /// Serves the request through the connection as `user`'s account; never as root or batond's
    /// own user, whose rights are everything (a proxy's identity provider may let a person pick
    /// the name `root`: OIDC's preferred_username is neither unique nor stable).
    private func serve(_ request: Request, as user: ActingUser, _ connection: any Caller, _ generation: Generation) {
        guard user.uid != 0, user.uid != generation.owner else {
            return Exchange(request: request, connection: connection)
                .fail(.forbidden("\(user.name) is root or batond's own user: a request made as it gets nothing (as names people, not the daemon)"))
        }
        // A group principal: recorded as the person the dashboard named, via their group.
        let principal = request.asGroup.flatMap { group in request.actingAs.map { "\($0) via group:\(group)" } }
        let acting = ActingCaller(connection, as: Peer(uid: user.uid, gid: user.gid, pid: connection.peer.pid, principal: principal))
        serve(request, Exchange(request: request, connection: acting), generation, acting)
    }

    /// The account `name` was found to be (nil inside: no such user), when read within `kept`;
    /// nil when not read, or read too long ago (looked up again).
    private func cachedAccount(_ name: String) -> ActingUser?? {
        let now = ContinuousClock.now
        return actingCache.access { cache in cache[name].flatMap { now - $0.at < kept ? .some($0.user) : nil } }
    }

    /// The connection a caller stands for: watches and output follows are kept by it, so that a
    /// request served `as` someone stops with its connection.
    static func key(of caller: any Caller) -> ObjectIdentifier {
        (caller as? ActingCaller).map { ObjectIdentifier($0.base) } ?? ObjectIdentifier(caller)
    }
}

/// The account a request's `as` names: its uid, primary gid and every group it is in.
public struct ActingUser: Sendable, Equatable {
    public var name: String
    public var uid: UInt32
    public var gid: UInt32
    public var groups: [UInt32]

    public init(name: String, uid: UInt32, gid: UInt32, groups: [UInt32]) {
        self.name = name
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }

    /// A group principal of the user database's group of that name: the uid no account has, the
    /// group's gid and no other group; nil when the machine has no such group.
    @Sendable public static func lookUpGroup(_ name: String) -> ActingUser? {
        guard Request.isUserName(name), let gid = UserDatabase.groupID(name) else { return nil }
        return ActingUser(name: "group:\(name)", uid: Peer.groupPrincipalUID, gid: gid, groups: [gid])
    }

    /// The user database's account of that name (never a number: `validated` refused one), or nil.
    /// `group:NAME` (what `asGroup` is looked up as, a key no account name can be): the group principal.
    @Sendable public static func lookUp(_ name: String) -> ActingUser? {
        if name.hasPrefix("group:") { return lookUpGroup(String(name.dropFirst(6))) }
        // An account of the group principals' uid (4294967294) would be served as every one of them.
        guard Request.isUserName(name), let account = UserDatabase.account(name), account.uid != Peer.groupPrincipalUID else { return nil }
        return ActingUser(name: account.name, uid: account.uid, gid: account.gid,
                          groups: UserDatabase.groups(of: account.name, primary: account.gid))
    }
}

/// The same connection as `base`, with another peer: what a request served `as` a user sees.
final class ActingCaller: Caller {
    let base: any Caller
    let peer: Peer

    init(_ base: any Caller, as peer: Peer) {
        self.base = base
        self.peer = peer
    }

    var isClosed: Bool { base.isClosed }
    func send(_ line: [UInt8]) { base.send(line) }
    func endRequest() { base.endRequest() }
    func markStreaming() { base.markStreaming() }
    func whenDrained(below bytes: Int, _ body: @escaping @Sendable () -> Void) { base.whenDrained(below: bytes, body) }
    func hold(_ bytes: Int) { base.hold(bytes) }
    func park() { base.park() }
    func unpark() { base.unpark() }
}
