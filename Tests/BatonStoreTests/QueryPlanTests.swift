import BatonCore
@testable import BatonStore
import CSQLite
import Foundation
import Testing

@Suite("History query plans")
struct QueryPlanTests {
    static let now = Timestamp(microseconds: 1_800_000_000_000_000)
    static let filters: [(String, HistoryFilter)] = [
        ("all", HistoryFilter()),
        ("action", HistoryFilter(actions: ["deploy"])),
        ("two actions", HistoryFilter(actions: ["deploy", "backup"])),
        ("phase", HistoryFilter(phases: [.failure])),
        ("two phases", HistoryFilter(phases: [.failure, .cancelled])),
        ("action and phase", HistoryFilter(actions: ["deploy"], phases: [.failure, .cancelled])),
        ("since", HistoryFilter(since: Timestamp(microseconds: now.rawValue - 86_400_000_000))),
        ("since and until", HistoryFilter(since: Timestamp(microseconds: now.rawValue - 2 * 86_400_000_000),
                                          until: Timestamp(microseconds: now.rawValue - 86_400_000_000))),
        ("action, since and until", HistoryFilter(actions: ["deploy"], since: Timestamp(microseconds: 1), until: now)),
        ("action and param", HistoryFilter(actions: ["deploy"], params: ["env": "prod"])),
        ("reverse", HistoryFilter(actions: ["deploy"], reverse: true)),
        ("a later page", HistoryFilter(limit: 500, after: 1_000)),
        ("a later page of two actions", HistoryFilter(actions: ["deploy", "backup"], limit: 500, after: 1_000)),
        ("a later page, reversed, of a phase", HistoryFilter(phases: [.failure], limit: 500, reverse: true, after: 1_000)),
    ]

    /// The plan lines of a history query (`EXPLAIN QUERY PLAN`).
    static func plan(_ filter: HistoryFilter, on connection: Connection) throws -> [String] {
        var lines: [String] = []
        for (sql, arguments) in History.queries(filter) {
            try connection.withStatement("EXPLAIN QUERY PLAN " + sql) { statement in
                try statement.bind(arguments)
                while try statement.step() { lines.append(statement.string(3) ?? "") }
            }
        }
        return lines
    }

    @Test("split queries give the same runs as one query would: merged by id, limited, reversed")
    func merged() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        for id in Int64(1)...30 {
            let action = ["a", "b", "c"][Int(id % 3)]
            let at = Timestamp(microseconds: Self.now.rawValue + id)
            let run = RunSnapshot(id: id, action: action, key: action, phase: .queued, policy: .reject, params: [:], trigger: nil, queuedAt: at)
            _ = await store.commit([.created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: at))])
            if id % 2 == 0 {
                _ = await store.commit([.transition(Transition(runID: id, seq: 2, from: .queued, to: .cancelled, at: at))])
            }
        }
        let history = History(connection: try Connection(path: dir.file("h.sqlite"), readOnly: true))
        #expect(try history.runs(HistoryFilter(actions: ["a", "b"], limit: 5)).map(\.id) == [30, 28, 27, 25, 24])
        #expect(try history.runs(HistoryFilter(actions: ["a", "b"], limit: 3, reverse: true)).map(\.id) == [1, 3, 4])
        #expect(try history.runs(HistoryFilter(phases: [.queued, .cancelled], limit: 4)).map(\.id) == [30, 29, 28, 27])
        #expect(try history.runs(HistoryFilter(since: Timestamp(microseconds: Self.now.rawValue + 25),
                                               until: Timestamp(microseconds: Self.now.rawValue + 28))).map(\.id) == [27, 26, 25])
        #expect(try history.runs(HistoryFilter(since: Timestamp(microseconds: Self.now.rawValue + 100))).isEmpty)
        // Pages go on from the last id of the one before, in either order.
        #expect(try history.runs(HistoryFilter(actions: ["a", "b"], limit: 5, after: 24)).map(\.id) == [22, 21, 19, 18, 16])
        #expect(try history.runs(HistoryFilter(actions: ["a", "b"], limit: 3, reverse: true, after: 4)).map(\.id) == [6, 7, 9])
        #expect(try history.runs(HistoryFilter(phases: [.cancelled], limit: 2, after: 27)).map(\.id) == [26, 24])
        store.close()
    }

    @Test("no standard history filter scans the whole runs table", arguments: filters.map(\.0))
    func noFullScan(_ name: String) throws {
        let dir = TemporaryDirectory()
        try Store(path: dir.file("h.sqlite")).close()
        let connection = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        let filter = Self.filters.first { $0.0 == name }!.1
        let lines = try Self.plan(filter, on: connection)
        // Never a sort of every matching row: the rows come in id order from an index or the table.
        #expect(!lines.contains { $0.contains("TEMP B-TREE") }, "\(name): \(lines)")
        if name == "all" {
            // No filter: the table in id order, stopping at the limit.
            #expect(lines == ["SCAN runs"], "\(name): \(lines)")
        } else {
            // "SCAN runs" alone would read every run; a filter must seek ("SEARCH") or walk an index.
            #expect(!lines.contains { $0 == "SCAN runs" }, "\(name): \(lines)")
            #expect(lines.contains { $0.hasPrefix("SEARCH runs USING") || $0.hasPrefix("SCAN runs USING") }, "\(name): \(lines)")
        }
    }

    @Test("a time window's first page reads about a page of rows, not the window (counted in SQLite VM steps)")
    func windowWork() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        // 5,000 runs, one a minute; a 2-day window holds all of them.
        var entries: [JournalEntry] = []
        for id in Int64(1)...5_000 {
            let at = Timestamp(microseconds: Self.now.rawValue - (5_000 - id) * 60_000_000)
            let run = RunSnapshot(id: id, action: "a", key: "a", phase: .queued, policy: .reject, params: [:], trigger: nil, queuedAt: at)
            entries.append(.created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: at)))
        }
        _ = await store.commit(entries)
        store.close()
        let connection = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        let filter = HistoryFilter(since: Timestamp(microseconds: Self.now.rawValue - 2 * 86_400_000_000),
                                   until: Timestamp(microseconds: Self.now.rawValue + 1))
        let (sql, arguments) = History.query(filter)
        let steps = try connection.withStatement(sql) { statement -> Int32 in
            try statement.bind(arguments)
            var rows = 0
            while try statement.step() { rows += 1 }
            #expect(rows == 50)
            return statement.sqlite.sqlite3_stmt_status(statement.handle, SQLITE_STMTSTATUS_VM_STEP, 0)
        }
        // min(id)/max(id) over the window took 7,700 steps here (it grows with the window); two seeks and a
        // page take about 1,350.
        #expect(steps < 3_000, "\(steps) VM steps for one page")
    }

    /// Issue 21, item 4: each action's query read its own page and the pages were sorted together,
    /// so a history of 1,000 actions read 1,000 pages for one (and held them all in memory).
    @Test("a history of many actions reads about one page of rows in all, not a page per action (counted in SQLite VM steps)")
    func manyActionsWork() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        // 200 actions, 25 runs each, interleaved: the newest page holds runs of the last 10 actions.
        var entries: [JournalEntry] = []
        for id in Int64(1)...5_000 {
            let action = "a\(id % 200)", at = Timestamp(microseconds: Self.now.rawValue + id)
            let run = RunSnapshot(id: id, action: action, key: action, phase: .queued, policy: .reject, params: [:], trigger: nil, queuedAt: at)
            entries.append(.created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: at)))
        }
        _ = await store.commit(entries)
        store.close()
        let history = History(connection: try Connection(path: dir.file("h.sqlite"), readOnly: true))
        let filter = HistoryFilter(actions: (0..<200).map { "a\($0)" }, limit: 10)
        let steps = { (cursors: [RunCursor]) in
            cursors.reduce(0) { $0 + Int($1.statement.sqlite.sqlite3_stmt_status($1.statement.handle, SQLITE_STMTSTATUS_VM_STEP, 0)) }
        }
        let cursors = try history.cursors(filter)
        #expect(try History.merge(cursors, limit: 10, newestFirst: true).map(\.id) == Array((4_991...5_000).reversed()))
        let merged = steps(cursors)
        // Each query read to its limit, as before the merge: 46,400 steps here, against 6,620 merged.
        let pages = try history.cursors(filter)
        for cursor in pages { while cursor.head != nil { try cursor.advance() } }
        let paged = steps(pages)
        #expect(merged * 4 < paged, "\(merged) VM steps merged, \(paged) a page per action")
    }

    /// The search's filter shapes, each with the index that each of its queries reads: the same
    /// for the history's queries (no text) and the search's of param values (a text), one per part.
    static let searchShapes: [(String, HistoryFilter, String)] = [
        ("one action, two phases", HistoryFilter(actions: ["deploy"], phases: [.failure, .cancelled]), "runs_by_action (action=?)"),
        ("two actions, one phase", HistoryFilter(actions: ["deploy", "backup"], phases: [.failure]), "runs_by_phase (phase=?)"),
        ("two actions, two phases", HistoryFilter(actions: ["deploy", "backup"], phases: [.failure, .cancelled]), "runs_by_action (action=?)"),
        ("three actions, three phases, a page on", HistoryFilter(actions: ["deploy", "backup", "sync"], phases: [.success, .failure, .cancelled],
                                                                 limit: 20, after: 1_000), "runs_by_action (action=? AND id<?)"),
        ("two phases", HistoryFilter(phases: [.failure, .cancelled]), "runs_by_phase (phase=?)"),
    ]

    /// Review of migration 17: the search's query of param values kept every action and phase in
    /// one `IN` each, which version 16 served with `runs_by_action_outcome (action=? AND phase=?)`
    /// and version 17 with `runs_by_phase`, reading every run in those phases (18.6 to 95.7 ms on
    /// 200,000 runs). Split as the history's queries are, each part seeks one action's runs in id order.
    @Test("the search's queries, with a text and without, read one action's or one phase's runs in id order, never sorting",
          arguments: searchShapes.map(\.0))
    func searchPlans(_ name: String) throws {
        let dir = TemporaryDirectory()
        try Store(path: dir.file("h.sqlite")).close()
        let connection = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        let (_, filter, index) = Self.searchShapes.first { $0.0 == name }!
        let withText = History.paramQueries(SearchText("prod"), filter)
        for (queries, what) in [(History.queries(filter), "no text"), (withText, "a text")] {
            #expect(queries.count == History.parts(filter).count)
            for (sql, arguments) in queries {
                let lines = try connection.withStatement("EXPLAIN QUERY PLAN " + sql) { statement in
                    try statement.bind(arguments)
                    var lines: [String] = []
                    while try statement.step() { lines.append(statement.string(3) ?? "") }
                    return lines
                }
                #expect(!lines.contains { $0.contains("TEMP B-TREE") }, "\(name), \(what): \(lines)")
                #expect(lines.filter { $0.hasPrefix("SEARCH runs") || $0.hasPrefix("SCAN runs") } == ["SEARCH runs USING INDEX \(index)"],
                        "\(name), \(what): \(lines)")
            }
        }
        #expect(History.parts(filter).count == (filter.actions.count > 1 ? filter.actions.count : filter.actions.isEmpty ? filter.phases.count : 1))
    }

    @Test("a search of several actions and phases finds the runs one query would: newest first, limited, paged, names listed twice once")
    func searchMerged() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        // 60 runs of three actions, every other one cancelled; a param value holds "prod" in three of four.
        func action(_ id: Int64) -> String { ["a", "b", "c"][Int(id % 3)] }
        func phase(_ id: Int64) -> Phase { id % 2 == 0 ? .cancelled : .queued }
        func matches(_ id: Int64) -> Bool { id % 4 != 0 }
        for id in Int64(1)...60 {
            let at = Timestamp(microseconds: Self.now.rawValue + id)
            let params = ["env": matches(id) ? "Prod-\(id)" : "dev-\(id)"]
            let run = RunSnapshot(id: id, action: action(id), key: action(id), phase: .queued, policy: .reject, params: params, trigger: nil, queuedAt: at)
            _ = await store.commit([.created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: at))])
            if phase(id) == .cancelled {
                _ = await store.commit([.transition(Transition(runID: id, seq: 2, from: .queued, to: .cancelled, at: at))])
            }
        }
        store.close()
        let history = History(connection: try Connection(path: dir.file("h.sqlite"), readOnly: true))
        let filters = [
            HistoryFilter(actions: ["a", "b"], phases: [.queued, .cancelled], limit: 7),
            HistoryFilter(actions: ["a", "b", "a"], phases: [.cancelled, .cancelled], limit: 5),
            HistoryFilter(actions: ["a", "c"], phases: [.queued], limit: 4, after: 40),
            HistoryFilter(actions: ["b"], phases: [.queued, .cancelled], limit: 6, after: 30),
            HistoryFilter(phases: [.queued, .cancelled], limit: 9),
            HistoryFilter(actions: ["a", "b", "c"], limit: 100),
        ]
        for filter in filters {
            let expected = (Int64(1)...60).reversed().filter { id in
                matches(id) && (filter.actions.isEmpty || filter.actions.contains(action(id)))
                    && (filter.phases.isEmpty || filter.phases.contains(phase(id))) && filter.after.map { id < $0 } != false
            }.prefix(filter.limit)
            let found = try history.search("prod", filter)
            #expect(found.matches.map(\.run.id) == Array(expected), "\(filter)")
            #expect(found.matches.allSatisfy { $0.params == ["env"] })
        }
    }
}
