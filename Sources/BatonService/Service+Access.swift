import BatonCore

extension Service {
    /// Whether the peer may do `permission` on the action named (or globally, with no name).
    /// An action a reload removed is judged by the global rules.
    func allowed(_ permission: Permission, _ name: String?, _ generation: Generation, _ peer: Peer) -> Bool {
        // Root and the owner skip the group lookup (the rules would admit them anyway).
        if peer.uid == 0 || peer.uid == generation.owner { return true }
        let action = name.flatMap { generation.actions[$0] }
        return generation.access.allows(permission, action: action, uid: peer.uid, groups: groups(of: peer),
                                        owner: generation.owner)
    }

    /// Answers `forbidden` once the refusal is recorded (for `baton history --denied`).
    func refuse(_ permission: Permission, _ name: String?, _ exchange: Exchange) {
        let request = exchange.request
        let record = TriggerRecord(runID: request.run, action: name ?? "", key: request.key ?? "", decision: .denied(permission),
                                   policy: request.policy ?? .reject, peer: exchange.peer, at: .now, params: recordedParams(request, name, generation),
                                   via: exchange.peer.principal)
        let error = forbidden(permission, name, exchange)
        if permission == .trigger, let name { metrics.triggered(name, decision: "denied") }
        journal.enqueue([.trigger(record)]) { _ in exchange.fail(error) }
    }

    /// A refused request's params as its record keeps them: a secret param's value as `***`.
    func recordedParams(_ request: Request, _ name: String?, _ generation: Generation) -> [String: String] {
        var params = request.params ?? [:]
        guard !params.isEmpty, let name, let action = generation.actions[name] else { return params }
        for secret in action.secretParams where params[secret] != nil { params[secret] = Action.maskedValue }
        return params
    }

    func forbidden(_ permission: Permission, _ name: String?, _ exchange: Exchange) -> BatonError {
        .forbidden("\(described(exchange.peer)) may not \(name.map { "\(permission.rawValue) \($0)" } ?? permission.rawValue)")
    }

    /// Throws `forbidden` naming the permission unless the peer holds it. A refused trigger,
    /// cancel or admin request is recorded (who, what, when) for `baton history --denied`.
    func require(_ permission: Permission, _ name: String?, _ generation: Generation, _ request: Request,
                 _ peer: Peer) async throws(BatonError) {
        guard !allowed(permission, name, generation, peer) else { return }
        let what = name.map { "\(permission.rawValue) \($0)" } ?? permission.rawValue
        if permission != .read {
            let record = TriggerRecord(runID: request.run, action: name ?? "", key: request.key ?? "",
                                       decision: .denied(permission), policy: request.policy ?? .reject,
                                       peer: peer, at: .now, params: recordedParams(request, name, generation), via: peer.principal)
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                journal.enqueue([.trigger(record)]) { _ in done.resume() }
            }
        }
        throw .forbidden("\(described(peer)) may not \(what)")
    }

    /// The names among `names` whose runs the peer may read.
    func readable(_ names: some Sequence<String>, _ generation: Generation, _ peer: Peer) -> Set<String> {
        Set(names).filter { allowed(.read, $0, generation, peer) }
    }

    /// The peer's groups: its gid from SO_PEERCRED (never cached: it is this connection's), plus
    /// the user database's groups of its uid, kept 10 s per uid so that a busy client does not
    /// make every request read /etc/group (a membership change applies within 10 s). A request
    /// finds them cached (`received` looked them up off the loop first); what outlived the 10 s (a
    /// watch's updates, a long read) uses them while the lookup thread reads them again: the user
    /// database is never asked where this runs. Asked on the loop and by requests the read driver
    /// runs (`require`): a lock.
    private func groups(of peer: Peer) -> [UInt32] {
        // A group principal is in its group and no other (its uid has no account to look up); a
        // socket peer of that uid (no principal) is looked up as any other.
        if peer.isGroupPrincipal { return [peer.gid] }
        let now = ContinuousClock.now
        let (known, stale) = groupCache.withLock { cache -> ([UInt32]?, Bool) in
            guard var cached = cache[peer.uid] else { return (nil, false) }
            let stale = now - cached.at >= kept
            // One refresh at a time: the entry counts as fresh until it comes back.
            if stale { cached.at = now; cache[peer.uid] = cached }
            return (cached.groups, stale)
        }
        if stale { refreshGroups(of: peer) }
        // None at all (a caller that skipped `take`): read here, as a last resort.
        let groups = known ?? peer.databaseGroups
        if known == nil { remember(groups, name: nil, of: peer.uid) }
        return groups.contains(peer.gid) ? groups : groups + [peer.gid]
    }

    /// The peer as an approver: its uid, its name (`uid N` while none is known) and its groups, as cached.
    func approver(_ peer: Peer) -> Approver {
        Approver(uid: peer.uid, name: peer.principal ?? knownName(peer) ?? "uid \(peer.uid)", groups: groups(of: peer))
    }

    /// Reads the peer's groups and name again on the lookup thread, and keeps them.
    private func refreshGroups(of peer: Peer) {
        lookups.submit { [self] in remember(peer.databaseGroups, name: userName(peer.uid), of: peer.uid) }
    }

    /// How long a uid's groups are kept.
    public static let groupsKept = Duration.seconds(10)

    func remember(_ groups: [UInt32], name: String?, of uid: UInt32) {
        let known = KnownUser(groups: groups, name: name, at: .now)
        groupCache.withLock { cache in
            if cache.count > 10_000 { cache.removeAll() }
            cache[uid] = known
        }
    }

    /// `uid 1000 (alice)` for messages (a refusal), the name as the lookup thread found it with
    /// the peer's groups; `uid 1000` while none is known. Never asks the user database itself:
    /// a refusal is answered on the loop.
    func described(_ peer: Peer) -> String {
        if let principal = peer.principal { return principal }
        return knownName(peer).map { "uid \(peer.uid) (\($0))" } ?? "uid \(peer.uid)"
    }

    /// The peer's user name as the lookup thread (or the start, for root and batond's user) read
    /// it; nil while none is known. Never asks the user database.
    func knownName(_ peer: Peer) -> String? {
        groupCache.withLock { $0[peer.uid]?.name }
    }

    /// Whether serving a request of `peer` may need its groups from the user database, which the
    /// cache does not hold fresh (root and the owner need none).
    func needsGroupLookup(_ peer: Peer, _ generation: Generation) -> Bool {
        guard peer.uid != 0, peer.uid != generation.owner, !peer.isGroupPrincipal else { return false }
        let now = ContinuousClock.now
        return groupCache.withLock { cache in cache[peer.uid].map { now - $0.at >= kept } ?? true }
    }

    /// Looks the peer's groups up on the lookup thread (NSS may block), then keeps them and calls
    /// `then` on the loop: kept there, not before, so that a later request of the peer that the
    /// loop takes first waits behind this one (its lookup queued after this one's) instead of
    /// overtaking it.
    func lookUpGroups(of peer: Peer, then: @escaping @Sendable () -> Void) {
        let reactor = reactor
        lookups.submit { [self] in
            let groups = peer.databaseGroups
            let name = userName(peer.uid)
            reactor.post { [self] in
                remember(groups, name: name, of: peer.uid)
                then()
            }
        }
    }
}

/// What the user database said of a uid: its groups and name, and when it was read.
struct KnownUser: Sendable {
    var groups: [UInt32]
    var name: String?
    var at: ContinuousClock.Instant
}
