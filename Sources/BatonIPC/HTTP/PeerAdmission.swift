/// Who may open one more connection to an `HTTPServer`, as a value (issue 21, item 16: any local
/// user could hold all 64 connections of the dashboard or `/metrics`, and the owner got 503;
/// issue 37, item 5: two local users held the webhook port, and a proxy's signed delivery failed).
///
/// Each peer is its uid (the owner of its socket, `TCPPeer`), or, when the kernel cannot say (a
/// peer on another host), one shared "unknown" peer. A peer stands as one of three
/// (`Standing`): an owner, a kept peer, or another. Invariants, kept by `admit` and `release`:
/// - at most `maxConnections` in all;
/// - a peer that is not an owner holds at most `maxPerPeer`;
/// - peers that are neither owners nor kept hold at most `maxConnections - reserved` together:
///   the rest is kept for owners and kept peers, however many other uids flood it.
/// `keep` changes who is kept (a reload); the counts stay, and others over their part after it
/// only wait for theirs to close.
public struct PeerAdmission: Sendable, Equatable {
    /// A peer as counted.
    public enum Peer: Sendable, Hashable {
        case uid(UInt32)
        case unknown
        public init(_ uid: UInt32?) { self = uid.map { .uid($0) } ?? .unknown }
    }

    /// How a peer is counted.
    public enum Standing: Sendable, Equatable {
        /// The server's own user (the dashboard's, `/metrics`'): the reserve, and no share.
        case owner
        /// A peer the reserve is kept for that still has its share (the webhooks' trusted proxies
        /// and the peers on other hosts, who send them).
        case kept
        /// Any other peer: its share, and never the reserve.
        case other
    }

    /// What `admit` decided.
    public enum Decision: Sendable, Equatable {
        case admitted
        /// Every connection is taken.
        case full
        /// What is left is kept for the owners and kept peers.
        case reserved
        /// This peer holds its share already.
        case peerFull
    }

    public let maxConnections: Int
    public let maxPerPeer: Int
    public let reserved: Int
    public let owners: Set<UInt32>
    /// The peers, besides owners, the reserve is kept for.
    public private(set) var kept: Set<Peer>
    public private(set) var counts: [Peer: Int] = [:]
    public private(set) var total = 0
    /// Connections held by peers that stand as `other`.
    public private(set) var others = 0

    public init(maxConnections: Int, maxPerPeer: Int, reserved: Int, owners: Set<UInt32>, kept: Set<Peer> = []) {
        self.maxConnections = max(maxConnections, 1)
        self.maxPerPeer = max(maxPerPeer, 1)
        self.reserved = min(max(reserved, 0), self.maxConnections - 1)
        self.owners = owners
        self.kept = kept
    }

    /// How `peer` is counted now.
    public func standing(_ peer: Peer) -> Standing {
        if case let .uid(uid) = peer, owners.contains(uid) { return .owner }
        return kept.contains(peer) ? .kept : .other
    }

    /// Whether `peer` may open one more connection; counts it if so.
    public mutating func admit(_ peer: Peer) -> Decision {
        guard total < maxConnections else { return .full }
        let standing = standing(peer)
        if standing == .other, others >= maxConnections - reserved { return .reserved }
        if standing != .owner, counts[peer, default: 0] >= maxPerPeer { return .peerFull }
        if standing == .other { others += 1 }
        counts[peer, default: 0] += 1
        total += 1
        return .admitted
    }

    /// A connection `admit` counted has closed.
    public mutating func release(_ peer: Peer) {
        guard let count = counts[peer], count > 0 else { return }
        counts[peer] = count == 1 ? nil : count - 1
        total -= 1
        if standing(peer) == .other { others -= 1 }
    }

    /// The reserve is kept for `peers` from now on: what others hold is counted again.
    public mutating func keep(_ peers: Set<Peer>) {
        guard peers != kept else { return }
        kept = peers
        others = counts.reduce(0) { $0 + (standing($1.key) == .other ? $1.value : 0) }
    }

    /// Whether `peer` is one of the server's own users.
    public func isOwner(_ peer: Peer) -> Bool { standing(peer) == .owner }

    /// Why a refused connection was refused, for its 503.
    public func reason(_ decision: Decision, _ peer: Peer) -> String {
        let who = if case let .uid(uid) = peer { "uid \(uid)" } else { "peers on other hosts" }
        let keptFor = kept.isEmpty ? "the server's owner" : owners.isEmpty ? "trusted senders" : "the server's owner and trusted senders"
        return switch decision {
        case .admitted: "admitted"
        case .full: "too many connections (\(maxConnections))"
        case .reserved: "too many connections: the last \(reserved) are kept for \(keptFor)"
        case .peerFull: "too many connections from \(who) (\(maxPerPeer) each)"
        }
    }
}
