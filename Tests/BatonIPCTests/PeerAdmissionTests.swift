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

    @Test("refusals name why: the peer's share, or the owner's reserve")
    func reasons() {
        let admission = Self.admission()
        #expect(admission.reason(.peerFull, .uid(65534)) == "too many connections from uid 65534 (3 each)")
        #expect(admission.reason(.reserved, .unknown) == "too many connections: the last 4 are kept for the server's owner")
        #expect(admission.reason(.full, .unknown) == "too many connections (10)")
    }
}
