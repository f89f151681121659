/// Who may open one more connection to an `HTTPServer`, as a value (issue 21, item 16: any local
/// user could hold all 64 connections of the dashboard or `/metrics`, and the owner got 503).
///
/// Each peer is its uid (the owner of its socket, `TCPPeer`), or, when the kernel cannot say (a
/// peer on another host), one shared "unknown" peer. Invariants, kept by `admit` and `release`:
/// - at most `maxConnections` in all;
/// - a peer that is not an owner holds at most `maxPerPeer`;
/// - peers that are not owners hold at most `maxConnections - reserved` together: the rest is
///   kept for the owners (the server's own user), however many uids flood it.
public struct PeerAdmission: Sendable, Equatable {
    /// A peer as counted.
    public enum Peer: Sendable, Hashable {
        case uid(UInt32)
        case unknown
        public init(_ uid: UInt32?) { self = uid.map { .uid($0) } ?? .unknown }
    }

    /// What `admit` decided.
    public enum Decision: Sendable, Equatable {
        case admitted
        /// Every connection is taken.
        case full
        /// What is left is kept for the server's owner.
        case reserved
        /// This peer holds its share already.
        case peerFull
    }

    public let maxConnections: Int
    public let maxPerPeer: Int
    public let reserved: Int
    public let owners: Set<UInt32>
    public private(set) var counts: [Peer: Int] = [:]
    public private(set) var total = 0
    /// Connections held by peers that are not owners.
    public private(set) var others = 0

    public init(maxConnections: Int, maxPerPeer: Int, reserved: Int, owners: Set<UInt32>) {
        self.maxConnections = max(maxConnections, 1)
        self.maxPerPeer = max(maxPerPeer, 1)
        self.reserved = min(max(reserved, 0), self.maxConnections - 1)
        self.owners = owners
    }

    /// Whether `peer` may open one more connection; counts it if so.
    public mutating func admit(_ peer: Peer) -> Decision {
        guard total < maxConnections else { return .full }
        if !isOwner(peer) {
            guard others < maxConnections - reserved else { return .reserved }
            guard counts[peer, default: 0] < maxPerPeer else { return .peerFull }
            others += 1
        }
        counts[peer, default: 0] += 1
        total += 1
        return .admitted
    }

    /// A connection `admit` counted has closed.
    public mutating func release(_ peer: Peer) {
        guard let count = counts[peer], count > 0 else { return }
        counts[peer] = count == 1 ? nil : count - 1
        total -= 1
        if !isOwner(peer) { others -= 1 }
    }

    public func isOwner(_ peer: Peer) -> Bool {
        if case let .uid(uid) = peer { return owners.contains(uid) }
        return false
    }

    /// Why a refused connection was refused, for its 503.
    public func reason(_ decision: Decision, _ peer: Peer) -> String {
        let who = if case let .uid(uid) = peer { "uid \(uid)" } else { "peers on other hosts" }
        return switch decision {
        case .admitted: "admitted"
        case .full: "too many connections (\(maxConnections))"
        case .reserved: "too many connections: the last \(reserved) are kept for the server's owner"
        case .peerFull: "too many connections from \(who) (\(maxPerPeer) each)"
        }
    }
}
