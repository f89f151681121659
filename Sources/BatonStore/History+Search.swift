import BatonCore
import FoundationEssentials

/// `search`: the runs whose kept output (through the trigram index, `output_search`) or param
/// values hold a text, newest first, each with its matching lines and their numbers.
extension History {
    /// The runs of `filter` (its actions, phases, window and params; its limit, at most
    /// `SearchMatch.maxRuns`) whose output or param values hold `text`, case ignored. A text of
    /// three characters or more is looked up in the index; a shorter one is a scan of every
    /// chunk (`LIKE`), newest first, until the limit is found.
    public func search(_ text: String, _ filter: HistoryFilter, maxLines: Int = SearchMatch.maxLines) throws -> [SearchMatch] {
        let search = SearchText(text)
        let limit = min(max(filter.limit, 0), SearchMatch.maxRuns)
        guard !search.folded.isEmpty, limit > 0 else { return [] }
        // A file read while batond is down may predate the index (version 10): say so, not "no such table".
        guard try connection.scalar("SELECT count(*) FROM sqlite_master WHERE name = 'output_search'")?.int64 == 1 else {
            throw DatabaseError(code: 1, message: "this history has no search index yet (it predates version 10): batond builds it when it next opens the file")
        }
        var (clauses, arguments) = Self.conditions(filter)
        var runs = try outputMatches(search, clauses, arguments, limit: limit)
        clauses.append("EXISTS (SELECT 1 FROM json_each(runs.params) WHERE json_each.value LIKE ? ESCAPE '\\')")
        arguments.append(.text(search.likePattern))
        let byParams = try connection.withStatement("""
            SELECT \(Self.runColumns) FROM runs WHERE \(clauses.joined(separator: " AND ")) ORDER BY id DESC LIMIT ?
            """) { s in
            try s.bind(arguments + [.integer(Int64(limit))])
            var found: [RunSnapshot] = []
            while try s.step() { found.append(Self.decodeRun(s)) }
            return found
        }
        for run in byParams where !runs.contains(where: { $0.id == run.id }) { runs.append(run) }
        return try runs.sorted { $0.id > $1.id }.prefix(limit).map { run in
            var lines = MatchingLines(search, maxLines: maxLines)
            // SQLite's lower() folds ASCII only, byte for byte: the folded copy keeps every offset.
            let folded = search.isASCII ? "CAST(lower(CAST(bytes AS TEXT)) AS BLOB)" : "NULL"
            try connection.withStatement("SELECT start, bytes, \(folded) FROM output_chunks WHERE run_id = ? ORDER BY start") { s in
                try s.bind([.integer(run.id)])
                while try s.step() {
                    let bytes: [UInt8] = if case let .blob(value) = s.value(1) { value } else { [] }
                    if case let .blob(folded) = s.value(2) {
                        lines.take(bytes, folded: folded, at: s.int64(0) ?? 0)
                    } else {
                        lines.take(bytes, at: s.int64(0) ?? 0)
                    }
                }
            }
            lines.finish()
            let names = run.params.filter { search.isIn($0.value) }.keys.sorted()
            return SearchMatch(run: run, lines: lines.lines, lineCount: lines.count, params: names.isEmpty ? nil : names)
        }
    }

    /// The runs of the filter with a chunk that holds the text, in the order of their newest
    /// such chunk, up to `limit`: the index's (or the scan's) chunks newest first, each run
    /// checked against the filter once.
    private func outputMatches(_ search: SearchText, _ clauses: [String], _ arguments: [DatabaseValue],
                               limit: Int) throws -> [RunSnapshot] {
        let chunks = search.usesIndex
            ? ("SELECT c.run_id FROM output_chunks c WHERE c.rowid = ?", "SELECT rowid FROM output_search WHERE output_search MATCH ? ORDER BY rowid DESC",
               DatabaseValue.text(search.matchQuery))
            : ("SELECT ?", "SELECT run_id FROM output_chunks WHERE CAST(bytes AS TEXT) LIKE ? ESCAPE '\\' ORDER BY rowid DESC",
               DatabaseValue.text(search.likePattern))
        let check = "SELECT \(Self.runColumns) FROM runs WHERE " + (["id = ?"] + clauses).joined(separator: " AND ")
        var seen = Set<Int64>()
        var found: [RunSnapshot] = []
        try connection.withStatement(chunks.0) { owner in
            try connection.withStatement(check) { runRow in
                try connection.withStatement(chunks.1) { candidates in
                    try candidates.bind([chunks.2])
                    while found.count < limit, try candidates.step() {
                        // The index names a chunk; the scan names its run already.
                        owner.reset()
                        try owner.bind([.integer(candidates.int64(0) ?? 0)])
                        guard try owner.step(), let run = owner.int64(0), seen.insert(run).inserted else { continue }
                        runRow.reset()
                        try runRow.bind([.integer(run)] + arguments)
                        if try runRow.step() { found.append(Self.decodeRun(runRow)) }
                    }
                }
            }
        }
        return found
    }
}
