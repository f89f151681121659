import BatonCore
@testable import BatonFleet
import Testing

/// The fleet's advisory locks (`FleetAdvisoryLock`): a name's key is the same in every process
/// (every host computes it), namespaces apart, and a transaction takes each key once, in order.
@Suite("FleetAdvisoryLock: keys every host agrees on, taken in one order")
struct FleetAdvisoryLockTests {
    @Test("the key is FNV-1a of namespace NUL name: fixed values, namespaces apart")
    func keys() {
        // Computed by hand from the FNV-1a 64-bit definition, so a change of the function fails here
        // (hosts of two versions would lock different keys for one action).
        #expect(FleetAdvisoryLock("", "").key == Int64(bitPattern: 0xaf63_bd4c_8601_b7df))
        // The keys a running fleet holds (computed outside Swift, from FNV-1a's definition): a
        // host of this release must lock the same ones as a host of the last.
        #expect(FleetAdvisoryLock("baton pause", "deploy").key == Int64(bitPattern: 0xedc8_4bdf_5132_bdba))
        #expect(FleetAdvisoryLock("baton rate", "key k").key == Int64(bitPattern: 0xdde1_30f4_d901_b907))
        #expect(FleetAdvisoryLock("baton rate", "action deploy").key == 6_164_802_723_402_509_856)
        #expect(FleetAdvisoryLock("baton pause", "deploy") == FleetAdvisoryLock("baton pause", "deploy"))
        #expect(FleetAdvisoryLock("baton pause", "deploy") != FleetAdvisoryLock("baton rate", "deploy"))
        #expect(FleetAdvisoryLock("baton pause", "a") != FleetAdvisoryLock("baton paus", "ea"), "the NUL keeps namespace and name apart")
    }

    @Test("statements: each key once, in ascending order of key")
    func statements() {
        let locks = ["deploy", "backup", "deploy", "renew"].map { FleetAdvisoryLock("baton pause", $0) }
        let taken = FleetAdvisoryLock.statements(locks).compactMap { $0.parameters.first ?? nil }.compactMap { Int64($0) }
        #expect(taken.count == 3 && taken == taken.sorted())
        #expect(Set(taken) == Set(locks.map(\.key)))
    }

    @Test("an item's pause locks: its pauses', resumes' and counted ends' actions, once each")
    func itemLocks() {
        let pause = ActionPause(action: "deploy", by: "alice", reason: "r", at: Timestamp(rawValue: 1))
        let entries: [JournalEntry] = [.pause(pause), .resume(action: "backup", by: "bob", at: Timestamp(rawValue: 2)),
                                       .failureStreak(run: 4, action: "deploy", most: 3),
                                       .output(runID: 4, tail: [], truncated: false)]
        let keys = FleetPauses.locks(for: entries).compactMap { $0.parameters.first ?? nil }.compactMap { Int64($0) }
        #expect(Set(keys) == Set(["deploy", "backup"].map { FleetAdvisoryLock("baton pause", $0).key }) && keys.count == 2)
        #expect(FleetPauses.locks(for: [.output(runID: 4, tail: [], truncated: false)]).isEmpty)
    }
}
