import BatonCore
@testable import BatonFleet
import Testing

/// The feed's catch-up reads its rows through one SELECT list (`CatchUpColumns`): rows built from
/// the statement's own SQL text (each value put where the SQL selects its column) decode to the
/// transition and its run, and a column added to a part, or the parts in another order, shifts
/// no read (the feed read `row[7...]` and `row[6]` by hand position before).
@Suite("The feed's catch-up rows: read where the SELECT puts them")
struct CatchUpRowTests {
    /// The catch-up's inner SELECT list (after the target column the outer SELECT adds).
    static var catchUpList: [String] {
        let inner = FleetFeed.catchUpQuery.components(separatedBy: "LATERAL (")[1].components(separatedBy: "FROM delta")[0]
        return StartRowTests.selected(inner + " FROM runs")
    }

    /// A row of `columns` for transition 41 (run 7's seq 2, `running` to `success`, at 5000), the run's row at `lastSeq`.
    static func row(_ columns: [String], lastSeq: Int) -> [String?] {
        var row = [String?](repeating: nil, count: columns.count)
        func put(_ column: String, _ value: String?) {
            guard let index = columns.firstIndex(of: column) else {
                Issue.record("\(column) is not selected")
                return
            }
            row[index] = value
        }
        put("t.id AS transition_id", "41")
        put("t.seq", "2")
        put("t.from_phase", "loading")
        put("t.to_phase", "success")
        put("t.at", "5000")
        put("r.last_seq", String(lastSeq))
        put("r.id", "7")
        put("r.action", "deploy")
        put("r.key", "deploy/prod")
        put("r.phase", lastSeq == 2 ? "success" : "failure")
        put("r.ended_at", "6000")
        put("r.error", lastSeq == 2 ? nil : "later")
        return row
    }

    @Test("the statement selects exactly the decoder's list")
    func selectsTheDefinition() {
        #expect(Self.catchUpList == StartRowTests.selected("SELECT \(CatchUpColumns.select.sql) FROM runs"))
        #expect(Self.catchUpList.count == CatchUpColumns.select.count)
    }

    @Test("a row of the statement decodes to its transition and its run; a later transition committed shows the run as it was at this one")
    func decoded() {
        let row = CatchUpColumns.decode(Self.row(Self.catchUpList, lastSeq: 2))
        #expect(row.transitionID == 41 && row.run.id == 7 && row.run.key == "deploy/prod")
        #expect(row.transition == Transition(runID: 7, seq: 2, from: .loading, to: .success, at: Timestamp(rawValue: 5000), detail: .init()))
        #expect(row.run.phase == .success && row.run.seq == 2 && row.run.endedAt == Timestamp(rawValue: 6000))
        let earlier = CatchUpColumns.decode(Self.row(Self.catchUpList, lastSeq: 3))
        #expect(earlier.run.phase == .success && earlier.run.error == nil && earlier.run.seq == 2, "the row's later failure is not this transition's")
    }

    @Test("a column added to a part, or the parts in another order, shifts no read", arguments: 0...2)
    func shifted(_ variant: Int) {
        let parts: [(CatchUpColumns.Part, [String])] = switch variant {
        case 0: CatchUpColumns.parts
        case 1: [(.transition, CatchUpColumns.transitionColumns + ["t.xid"]), (.lastSeq, ["r.last_seq", "r.definition"])]
        default: [(.lastSeq, ["r.last_seq"]), (.transition, CatchUpColumns.transitionColumns)]
        }
        let select = FleetSelect<CatchUpColumns.Part>(run: "r", parts)
        let columns = StartRowTests.selected("SELECT \(select.sql) FROM runs")
        for lastSeq in [2, 3] {
            #expect(CatchUpColumns.decode(Self.row(columns, lastSeq: lastSeq), select)
                == CatchUpColumns.decode(Self.row(Self.catchUpList, lastSeq: lastSeq)))
        }
    }
}
