import BatonCore

extension History {
    /// The runs matching a filter, newest first (oldest first with `reverse`). A filter split into
    /// several queries (`queries`) is merged by id as its rows are stepped: about `limit` rows are
    /// read in all, plus one per query, never `limit` of each.
    public func runs(_ filter: HistoryFilter) throws -> [RunSnapshot] {
        try Self.merge(try cursors(filter), limit: filter.limit, newestFirst: !filter.reverse)
    }

    /// The runs of `action` that first went loading at or after `since`, newest first.
    public func started(_ action: String, since: Timestamp) throws -> [RunSnapshot] {
        try connection.withStatement("SELECT \(Self.runColumns) FROM runs WHERE action = ? AND started_at >= ? ORDER BY id DESC") { s in
            try s.bind([.text(action), .integer(since.rawValue)])
            var runs: [RunSnapshot] = []
            while try s.step() { runs.append(Self.decodeRun(s)) }
            return runs
        }
    }

    /// One cursor per query of the filter, each on its first row. Open together, they read one
    /// snapshot of the history (a connection's statements share its read transaction).
    func cursors(_ filter: HistoryFilter) throws -> [RunCursor] {
        try Self.queries(filter).map { try RunCursor(connection, sql: $0.0, arguments: $0.1) }
    }

    /// A filter as parts that each an index serves in id order: several actions (or, without
    /// actions, several phases) become one part each, merged by id, since `IN` over two index
    /// ranges would sort every matching row to find the newest. A name listed twice is one part.
    static func parts(_ filter: HistoryFilter) -> [HistoryFilter] {
        var filter = filter
        var seenActions = Set<String>(), seenPhases = Set<Phase>()
        filter.actions = filter.actions.filter { seenActions.insert($0).inserted }
        filter.phases = filter.phases.filter { seenPhases.insert($0).inserted }
        if filter.actions.count > 1 {
            return filter.actions.map { action in
                var one = filter
                one.actions = [action]
                return one
            }
        }
        if filter.actions.isEmpty && filter.phases.count > 1 {
            return filter.phases.map { phase in
                var one = filter
                one.phases = [phase]
                return one
            }
        }
        return [filter]
    }

    /// Cursors that each yield runs in the same id order, merged into at most `limit` runs in that
    /// order, those `takes` accepts; a run two cursors yield comes once.
    static func merge(_ cursors: [RunCursor], limit: Int, newestFirst: Bool,
                      takes: (RunSnapshot) -> Bool = { _ in true }) throws -> [RunSnapshot] {
        var heap = Heap(cursors.filter { $0.head != nil }) { a, b in
            newestFirst ? a.head!.id > b.head!.id : a.head!.id < b.head!.id
        }
        var runs: [RunSnapshot] = []
        while runs.count < limit, let cursor = heap.first, let run = cursor.head {
            if runs.last?.id != run.id, takes(run) { runs.append(run) }
            try cursor.advance()
            if cursor.head == nil { heap.removeFirst() } else { heap.firstChanged() }
        }
        return runs
    }
}

/// One history query stepped a row at a time, for a merge: its statement lives as long as the
/// cursor, which never outlives the call that made it.
final class RunCursor {
    let statement: Statement
    /// The row the cursor is on; nil past the last.
    private(set) var head: RunSnapshot?

    init(_ connection: Connection, sql: String, arguments: [DatabaseValue]) throws {
        statement = try Statement(connection: connection, sql: sql)
        try statement.bind(arguments)
        try advance()
    }

    func advance() throws {
        head = try statement.step() ? History.decodeRun(statement) : nil
    }
}
