import BatonCore
@testable import BatonFleet
import Testing

/// The start paths read a run's row with its key, window, pause and approval columns after the run's
/// own (`FleetCoordinator.startable`, both of them), and decide on what `startFacts` reads of it: a
/// column added before the approval's must move what is read, or a waiting run would start unapproved.
@Suite("The start rows: what KeyDecision.mayStart decides on, read where the SELECT puts it")
struct StartRowTests {
    /// The SELECT list of a statement, split at its top-level commas.
    static func selected(_ sql: String) -> [String] {
        let list = sql.components(separatedBy: "FROM runs")[0].components(separatedBy: "SELECT").dropFirst().joined(separator: "SELECT")
        var columns: [String] = [], current = "", depth = 0
        for character in list {
            if character == "(" { depth += 1 } else if character == ")" { depth -= 1 }
            if character == ",", depth == 0 { columns.append(String(current.trimmingWhitespace())); current = "" } else { current.append(character) }
        }
        columns.append(String(current.trimmingWhitespace()))
        return columns
    }

    @Test("both startable statements put the pause after the window and the approval after the pause's joined columns",
          arguments: [FleetCoordinator.startable([1, 2], incarnation: "me").0,
                      FleetCoordinator.startable(keys: ["k"], incarnation: "me", count: 4).0])
    func columnsWhereRead(_ sql: String) {
        let columns = Self.selected(sql)
        let base = FleetRows.runColumnCount
        #expect(columns[base] == "r.last_seq")
        #expect(columns[base + 1] == "k.holder")
        #expect(columns[base + 5] == "p.action")
        #expect(columns.count == base + 5 + FleetPauses.joinedCount + 1)
        #expect(columns[base + 5 + FleetPauses.joinedCount] == FleetApprovals.waiting)
    }

    static func row(approving: Bool, pause: (hold: Bool, until: Int64?)? = nil, now: Int64 = 1_000) -> [String?] {
        var row = [String?](repeating: nil, count: FleetRows.runColumnCount)
        row += ["3", "7", nil, "{}", "t"]                                         // last seq, holder 7, no follow-up, nothing draining, window passed
        if let pause {
            row += ["deploy", "alice", "migrating", "10", pause.until.map(String.init), pause.hold ? "t" : "f", String(now)]
        } else {
            row += [nil, nil, nil, nil, nil, nil, String(now)]
        }
        return row + [approving ? "t" : "f"]
    }

    @Test func approvalFlagRead() {
        #expect(FleetCoordinator.startFacts(Self.row(approving: true)).approving)
        #expect(!FleetCoordinator.startFacts(Self.row(approving: false)).approving)
        #expect(FleetCoordinator.startFacts(Self.row(approving: false)).windowPassed)
        #expect(FleetCoordinator.startFacts(Self.row(approving: false)).slot.holder == 7)
    }

    @Test func pauseRead() {
        #expect(FleetCoordinator.startFacts(Self.row(approving: false, pause: (hold: true, until: nil))).paused)
        #expect(FleetCoordinator.startFacts(Self.row(approving: false, pause: (hold: false, until: 2_000))).paused)
        #expect(!FleetCoordinator.startFacts(Self.row(approving: false, pause: (hold: false, until: 500))).paused)
        #expect(!FleetCoordinator.startFacts(Self.row(approving: true, pause: nil)).paused)
    }
}
