import BatonCore
import FoundationEssentials

/// `search`: the runs whose kept output or param values hold a text, newest first, each with its
/// matching lines and their numbers. The output is scanned, or looked up in the trigram index
/// (`SearchIndex`) where the history keeps one; both find the same runs.
extension History {
    /// The runs of `filter` (its actions, phases, window and params; its limit, at most
    /// `SearchMatch.maxRuns`) whose output or param values hold `text`, case ignored. A text of
    /// three characters or more is looked up in the index where there is one; otherwise the kept
    /// output is scanned, newest chunk first, until the limit is found. Either way a chunk holds
    /// the text whole (a match that a chunk's end cuts in two is not found). A scan reads at most
    /// `budget` bytes of output, and stops (answering what it found) once `stop` says the asker
    /// has gone; a search cut short says where (`SearchResult.cut`).
    public func search(_ text: String, _ filter: HistoryFilter, maxLines: Int = SearchMatch.maxLines,
                       budget: Int = SearchMatch.maxScannedBytes, stop: @escaping () -> Bool = { false }) throws -> SearchResult {
        let search = SearchText(text)
        let limit = min(max(filter.limit, 0), SearchMatch.maxRuns)
        guard !search.folded.isEmpty, limit > 0 else { return SearchResult(matches: []) }
        let indexed = try search.usesIndex && SearchIndex.isPresent(connection)
        let (clauses, arguments) = Self.conditions(filter)
        var scan = Scan(budget: budget, stop: stop)
        var runs = try outputMatches(search, clauses, arguments, limit: limit, indexed: indexed, &scan)
        let byParams = try paramMatches(search, filter, limit: limit)
        for run in byParams where !runs.contains(where: { $0.id == run.id }) { runs.append(run) }
        let matches = try runs.sorted { $0.id > $1.id }.prefix(limit).map { run in
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
        return SearchResult(matches: matches, cut: scan.cut)
    }

    /// The runs of the filter with a param value that holds the text, newest first, up to `limit`.
    private func paramMatches(_ search: SearchText, _ filter: HistoryFilter, limit: Int) throws -> [RunSnapshot] {
        let cursors = try Self.paramQueries(search, filter).map { try RunCursor(connection, sql: $0.0, arguments: $0.1) }
        return try Self.merge(cursors, limit: limit, newestFirst: true) { $0.params.values.contains(where: search.isIn) }
    }

    /// The queries of the runs whose param values may hold the text, newest first: one per part of
    /// the filter (`parts`, as the history's), to be merged by id. SQLite's LIKE folds ASCII only:
    /// it names the runs that may hold the text (`widePattern`), and `isIn` (Unicode lowercasing,
    /// as the output's lines are found) decides.
    static func paramQueries(_ search: SearchText, _ filter: HistoryFilter) -> [(String, [DatabaseValue])] {
        parts(filter).map { part in
            var (clauses, arguments) = conditions(part)
            clauses.append("EXISTS (SELECT 1 FROM json_each(runs.params) WHERE json_each.value LIKE ? ESCAPE '\\')")
            arguments.append(.text(search.widePattern))
            return ("SELECT \(runColumns) FROM runs WHERE \(clauses.joined(separator: " AND ")) ORDER BY id DESC", arguments)
        }
    }

    /// A scan's bound: the bytes it may still read, and whether its asker is still there.
    struct Scan {
        var budget: Int
        let stop: () -> Bool
        var scanned: Int64 = 0
        var last: Int64?
        var cut: SearchCut?

        /// Whether another chunk may be read; at the end of the budget, says where the scan stopped.
        mutating func allows() -> Bool {
            if budget <= 0, let last {
                cut = SearchCut(scannedBytes: scanned, run: last)
                return false
            }
            return !stop()
        }

        /// Counts a chunk of `run` read.
        mutating func read(_ bytes: Int, of run: Int64) {
            scanned += Int64(bytes)
            budget -= bytes
            last = run
        }
    }

    /// The runs of the filter with a chunk that holds the text, in the order of their newest
    /// such chunk, up to `limit`: each run checked against the filter once, when first named, and
    /// (scanning) no chunk read of a run the filter refuses or that is found already.
    private func outputMatches(_ search: SearchText, _ clauses: [String], _ arguments: [DatabaseValue],
                               limit: Int, indexed: Bool, _ scan: inout Scan) throws -> [RunSnapshot] {
        let check = "SELECT \(Self.runColumns) FROM runs WHERE " + (["id = ?"] + clauses).joined(separator: " AND ")
        var taken: [Int64: RunSnapshot] = [:]
        var done = Set<Int64>()
        var found: [RunSnapshot] = []
        try connection.withStatement(check) { runRow in
            // The run, if the filter takes it and it is not found yet.
            func candidate(_ run: Int64) throws -> RunSnapshot? {
                if done.contains(run) { return nil }
                if let snapshot = taken[run] { return snapshot }
                runRow.reset()
                try runRow.bind([.integer(run)] + arguments)
                guard try runRow.step() else {
                    done.insert(run)
                    return nil
                }
                let snapshot = Self.decodeRun(runRow)
                taken[run] = snapshot
                return snapshot
            }
            let holds = { (run: Int64) throws -> Bool in
                guard let snapshot = try candidate(run) else { return true }
                found.append(snapshot)
                done.insert(run)
                return found.count < limit
            }
            if indexed {
                try indexedChunks(search, stop: scan.stop, holds)
            } else {
                try scannedChunks(search, &scan, reads: { try candidate($0) != nil }, holds)
            }
        }
        return found
    }

    /// The run of each chunk the index says holds the text, newest chunk first, told to `holds`
    /// until it returns false.
    private func indexedChunks(_ search: SearchText, stop: () -> Bool, _ holds: (Int64) throws -> Bool) throws {
        try connection.withStatement("SELECT run_id FROM output_chunks WHERE rowid = ?") { owner in
            try connection.withStatement("SELECT rowid FROM output_search WHERE output_search MATCH ? ORDER BY rowid DESC") { chunks in
                try chunks.bind([.text(search.matchQuery)])
                while try chunks.step() {
                    owner.reset()
                    try owner.bind([.integer(chunks.int64(0) ?? 0)])
                    guard try owner.step(), let run = owner.int64(0) else { continue }
                    if try !holds(run) || stop() { return }
                }
            }
        }
    }

    /// The same found by reading the chunks, newest first, those of the runs `reads` takes only:
    /// an ASCII text with `memmem` over SQLite's `lower()` (ASCII folded, as the
    /// trigram index folds it), another through Swift's lowercasing.
    private func scannedChunks(_ search: SearchText, _ scan: inout Scan, reads: (Int64) throws -> Bool, _ holds: (Int64) throws -> Bool) throws {
        let folded = search.isASCII ? "CAST(lower(CAST(bytes AS TEXT)) AS BLOB)" : "bytes"
        try connection.withStatement("SELECT \(folded) FROM output_chunks WHERE rowid = ?") { chunk in
            try connection.withStatement("SELECT rowid, run_id FROM output_chunks ORDER BY rowid DESC") { chunks in
                while try chunks.step() {
                    guard let run = chunks.int64(1), try reads(run) else { continue }
                    guard scan.allows() else { return }
                    chunk.reset()
                    try chunk.bind([.integer(chunks.int64(0) ?? 0)])
                    guard try chunk.step(), case let .blob(bytes) = chunk.value(0) else { continue }
                    let haystack = search.isASCII ? bytes : Array(String(decoding: bytes, as: UTF8.self).lowercased().utf8)
                    scan.read(bytes.count, of: run)
                    if SearchBytes.contains(search.folded, in: haystack), try !holds(run) { return }
                }
            }
        }
    }
}
