import BatonIPC
import Testing

@Suite("HTTP peer admission")
struct PeerAdmissionTests {
    static let owner: UInt32 = 1000

    /// 10 connections, 3 per peer, 4 kept for the owner.
    static func admission() -> PeerAdmission {
        PeerAdmission(maxConnections: 10, maxPerPeer: 3, reserved: 4, owners: [owner])
    }

    @Test("one uid gets its share and no more; another uid still gets its own", arguments: [
        (PeerAdmission.Peer.uid(65534), PeerAdmission.Peer.uid(1001)),
        (PeerAdmission.Peer.unknown, PeerAdmission.Peer.uid(65534)),
    ])
    func perPeer(flooder: PeerAdmission.Peer, other: PeerAdmission.Peer) {
        var admission = Self.admission()
        #expect((0..<3).map { _ in admission.admit(flooder) } == [.admitted, .admitted, .admitted])
        #expect(admission.admit(flooder) == .peerFull)
        #expect(admission.admit(other) == .admitted)
        admission.release(flooder)
        #expect(admission.admit(flooder) == .admitted, "a closed connection gives its place back")
    }

    @Test("many uids together never take what is kept for the owner; the owner fills it, then all is full")
    func reserveForOwner() {
        var admission = Self.admission()
        let decisions = (UInt32(2000)..<2010).map { admission.admit(.uid($0)) }
        #expect(decisions == Array(repeating: .admitted, count: 6) + Array(repeating: .reserved, count: 4))
        #expect(admission.others == 6)
        #expect((0..<4).map { _ in admission.admit(.uid(Self.owner)) } == Array(repeating: .admitted, count: 4))
        #expect(admission.admit(.uid(Self.owner)) == .full)
        #expect(admission.total == 10)
    }

    @Test("the owner has no per-peer share: it may hold every connection")
    func ownerUnbounded() {
        var admission = Self.admission()
        #expect((0..<10).allSatisfy { _ in admission.admit(.uid(Self.owner)) == .admitted })
        #expect(admission.admit(.uid(Self.owner)) == .full)
        #expect(admission.admit(.uid(7)) == .full)
    }

    @Test("releasing what was never admitted changes nothing; counts return to zero")
    func releaseBalanced() {
        var admission = Self.admission()
        admission.release(.uid(5))
        #expect(admission.total == 0 && admission.others == 0)
        _ = admission.admit(.uid(5))
        _ = admission.admit(.uid(Self.owner))
        admission.release(.uid(5))
        admission.release(.uid(Self.owner))
        admission.release(.uid(Self.owner))
        #expect(admission == Self.admission())
    }

    /// The webhook port's shape: no owner; the reserve kept for a proxy's uid and peers on other hosts.
    static let proxy: UInt32 = 33
    static func webhooks() -> PeerAdmission {
        PeerAdmission(maxConnections: 10, maxPerPeer: 3, reserved: 4, owners: [], kept: [.unknown, .uid(proxy)])
    }

    @Test("how each peer stands", arguments: [
        (admission(), PeerAdmission.Peer.uid(owner), PeerAdmission.Standing.owner),
        (admission(), .uid(65534), .other),
        (admission(), .unknown, .other),
        (webhooks(), .uid(owner), .other),
        (webhooks(), .uid(proxy), .kept),
        (webhooks(), .unknown, .kept),
        (webhooks(), .uid(0), .other),
    ])
    func standing(_ admission: PeerAdmission, _ peer: PeerAdmission.Peer, _ expected: PeerAdmission.Standing) {
        #expect(admission.standing(peer) == expected)
    }

    @Test("local uids flooding the webhook port leave the reserve to the proxy and to other hosts, each within its share")
    func reserveForKept() {
        var admission = Self.webhooks()
        let flood = [UInt32(2000), 2000, 2000, 2000, 2001, 2001, 2001, 2002].map { admission.admit(.uid($0)) }
        #expect(flood == [.admitted, .admitted, .admitted, .peerFull, .admitted, .admitted, .admitted, .reserved])
        #expect(admission.admit(.uid(Self.owner)) == .reserved, "batond's own uid sends no webhooks: it has no reserve")
        #expect((0..<4).map { _ in admission.admit(.uid(Self.proxy)) } == [.admitted, .admitted, .admitted, .peerFull])
        #expect(admission.admit(.unknown) == .admitted)
        #expect(admission.admit(.unknown) == .full)
        #expect(admission.others == 6 && admission.total == 10)
    }

    @Test("a reload that keeps the reserve for another peer counts again what others hold; others over their part wait for theirs to close")
    func keepAgain() {
        var admission = Self.webhooks()
        for _ in 0..<3 { _ = admission.admit(.uid(Self.proxy)) }
        for uid in UInt32(2000)..<2002 { for _ in 0..<3 { _ = admission.admit(.uid(uid)) } }
        #expect(admission.others == 6)
        admission.keep([.unknown])
        #expect(admission.others == 9 && admission.standing(.uid(Self.proxy)) == .other)
        #expect(admission.admit(.uid(2003)) == .reserved)
        admission.release(.uid(Self.proxy))
        #expect(admission.others == 8)
        admission.keep([.unknown, .uid(Self.proxy)])
        #expect(admission.others == 6)
        #expect(admission.admit(.uid(Self.proxy)) == .admitted)
    }

    @Test("refusals name why: the peer's share, or the owner's reserve")
    func reasons() {
        let admission = Self.admission()
        #expect(admission.reason(.peerFull, .uid(65534)) == "too many connections from uid 65534 (3 each)")
        #expect(admission.reason(.reserved, .unknown) == "too many connections: the last 4 are kept for the server's owner")
        #expect(admission.reason(.full, .unknown) == "too many connections (10)")
        #expect(Self.webhooks().reason(.reserved, .uid(2000)) == "too many connections: the last 4 are kept for trusted senders")
    }
}
