import BatonCore
@testable import BatonFleet
import Testing

/// The start paths read a run's row with its key, window, pause, approval, rate and needs columns
/// through one SELECT list (`StartColumns`), and decide with `KeyDecision.mayStart` on what it
/// decodes. These rows are built from each statement's own SQL text (a value put where the SQL
/// says its column is), never from the decoder's positions: a column added to the SQL but not
/// to the decoder, or a decoder that counts by hand, reads the wrong column and fails here (a
/// merge that added a pause column once made `approving` read the database's clock).
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

    static let statements = [FleetCoordinator.startable([1, 2]).0,
                             FleetCoordinator.startable(keys: ["k"], incarnation: "me", count: 4).0]

    /// A row of `sql` for `view` (run 7 of `deploy`, this host's, at the database's clock 1000),
    /// each value put where the SQL text selects its column: its window's deadline and rate hold
    /// as kept, before or after the clock (the engine compares them).
    static func row(_ sql: String, _ view: KeyDecision.StartView) -> [String?] {
        let columns = selected(sql)
        var row = [String?](repeating: nil, count: columns.count)
        func put(_ column: String, _ value: String?) {
            guard let index = columns.firstIndex(of: column) else {
                Issue.record("\(column) is not selected")
                return
            }
            row[index] = value
        }
        put("r.id", String(view.run))
        put("r.action", "deploy")
        put("r.key", "deploy")
        put("r.phase", view.phase.rawValue)
        put("r.last_seq", "3")
        put("k.holder", view.slot.holder.map(String.init))
        put("k.follow_up", view.slot.followUp.map(String.init))
        put("k.draining", view.slot.drainingText)
        put("r.incarnation", "me")
        put("r.debounce_until", view.windowPassed ? "900" : "1500")
        if view.paused {
            for (column, value) in zip(FleetPauses.columnList, ["deploy", "alice", "migrating", "10", nil, "f"]) { put("p." + column, value) }
        }
        put(FleetCooldown.databaseNow, "1000")
        put(FleetApprovals.waiting, view.approving ? "t" : "f")
        put("r.rate_until", view.rateHeld ? "2000" : "1000")
        let needs: String? = switch view.needs {
        case .met: nil
        case .waiting: "waiting"
        case .failed: "failed"
        }
        put("r.needs", needs)
        return row
    }

    @Test("each start path's row decodes to the verdict the rule's table states",
          arguments: statements.flatMap { sql in KeyDecisionRowsTests.starts.map { (sql, $0) } })
    func decodedVerdict(_ sql: String, _ start: KeyDecisionRowsTests.Start) throws {
        let decoded = try StartColumns.decode(Self.row(sql, start.view))
        #expect(decoded.verdict(me: "me") == start.verdict)
        #expect(decoded.run.id == 7 && decoded.seq == 3)
    }

    @Test("the SQL of both statements selects exactly the decoder's list", arguments: statements)
    func selectsTheDefinition(_ sql: String) {
        #expect(Self.selected(sql) == Self.selected("SELECT \(StartColumns.select.sql) FROM runs"))
        #expect(Self.selected(sql).count == StartColumns.select.count)
    }

    @Test("a pause that holds is read as paused, one whose time ran out is not")
    func pauseRead() throws {
        let sql = Self.statements[0]
        var row = Self.row(sql, KeyDecision.StartView(run: 7, slot: KeySlot(holder: 7), paused: true))
        #expect(try StartColumns.decode(row).verdict(me: "me") == .wait(.paused))
        row[Self.selected(sql).firstIndex(of: "p.until")!] = "2000"
        #expect(try StartColumns.decode(row).verdict(me: "me") == .wait(.paused))
        row[Self.selected(sql).firstIndex(of: "p.until")!] = "500"
        #expect(try StartColumns.decode(row).verdict(me: "me") == .start)
    }

    @Test("a window passes at its deadline, for its owner only; a rate hold ends at its time: by the row's clock")
    func windowsRead() throws {
        let sql = Self.statements[0]
        let column = { (name: String) in Self.selected(sql).firstIndex(of: name)! }
        var row = Self.row(sql, KeyDecision.StartView(run: 7, slot: KeySlot(holder: 7)))
        #expect(try StartColumns.decode(row).verdict(me: "me") == .start)
        row[column("r.debounce_until")] = "1000"
        #expect(try StartColumns.decode(row).verdict(me: "me") == .start, "a deadline at the clock has passed")
        row[column("r.debounce_until")] = "1001"
        #expect(try StartColumns.decode(row).verdict(me: "me") == .wait(.window))
        row[column("r.debounce_until")] = nil
        #expect(try StartColumns.decode(row).verdict(me: "other") == .wait(.window), "another host's run: its window never passes here")
        row[column("r.rate_until")] = "1001"
        #expect(try StartColumns.decode(row).verdict(me: "me") == .wait(.rate))
        row[column("r.rate_until")] = "1000"
        #expect(try StartColumns.decode(row).verdict(me: "me") == .start, "a rate hold ends at its time")
    }

    @Test("a start row without the database's clock, or with one that is not a number, is an error, not a clock at 0")
    func clockMissing() throws {
        let sql = Self.statements[0]
        var row = Self.row(sql, KeyDecision.StartView(run: 7, slot: KeySlot(holder: 7)))
        #expect(try StartColumns.decode(row).facts.now == Timestamp(rawValue: 1000))
        for clock in [nil, "", "now"] as [String?] {
            row[Self.selected(sql).firstIndex(of: FleetCooldown.databaseNow)!] = clock
            let error = #expect(throws: PGError.self) { try StartColumns.decode(row) }
            #expect(error?.message == "the database's clock could not be read in run 7's start row")
        }
    }

    enum Part: Hashable, Sendable { case a, b, c, extra }

    /// A column inserted anywhere (before, between, after the parts; a part grown by one) moves
    /// every read after it: each part still reads its own columns, the run's stay first.
    @Test("a column inserted anywhere in a SELECT list shifts no read", arguments: 0...3)
    func insertedColumn(_ at: Int) {
        var parts: [(Part, [String])] = [(.a, ["a1"]), (.b, ["b1", "b2"]), (.c, ["c1"])]
        parts.insert((.extra, ["x1", "x2"]), at: at)
        var grown = parts
        grown[0].1.append("grown")
        for list in [parts, grown] {
            let select = FleetSelect<Part>(run: "r", list)
            let row: [String?] = Self.selected("SELECT \(select.sql) FROM runs")
            #expect(row.count == select.count)
            #expect(row[0] == "r.id" && row[FleetRows.runColumnCount - 1] == "r.rate_until")
            for (part, columns) in list { #expect(select.columns(row, part) == columns) }
            #expect(select.value(row, .b, 1) == "b2")
        }
    }

    @Test("the other named reads: a run with its seq, with its approval, with its line")
    func otherSelects() {
        let seq = Self.selected("SELECT \(FleetRows.withSeq.sql) FROM runs")
        #expect(FleetRows.runAndSeq(seq.map { $0 }).seq == 1, "last_seq is not a number: the default")
        var row: [String?] = seq
        row[seq.firstIndex(of: "last_seq")!] = "12"
        row[0] = "5"
        #expect(FleetRows.runAndSeq(row).seq == 12 && FleetRows.runAndSeq(row).run.id == 5)
        let approval = Self.selected("SELECT \(FleetApprovals.withRun.sql) FROM runs")
        var withApproval: [String?] = approval
        withApproval[approval.firstIndex(of: "r.last_seq")!] = "4"
        withApproval[approval.firstIndex(of: "a.origin_uid")!] = "1000"
        withApproval[approval.firstIndex(of: "a.verdict")!] = nil
        let read = FleetApprovals.run(withApproval)
        #expect(read.seq == 4 && read.origin == 1000 && read.run.approval?.by == ["a.approvers"])
    }
}
