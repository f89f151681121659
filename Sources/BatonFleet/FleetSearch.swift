import BatonCore
import FoundationEssentials

/// `baton search` across the fleet (`Migrations/postgres/0024_output_search.sql`): the runs whose
/// kept output or param values hold a text, newest first, each with its matching lines and their
/// numbers, as one host's history answers (`History.search`). The chunks that may hold the text
/// are named by a `pg_trgm` GIN index over `encode(bytes, 'escape')`, asked with `ILIKE` (case
/// ignored; the server checks each chunk the index names); the lines are then found in the
/// found runs' chunks as one host finds them (`MatchingLines`). As there, a chunk holds the text
/// whole: a match that a chunk's end cuts in two is not found. Rights are the service's: it asks
/// for the actions the peer may read only.
enum FleetSearch {
    /// The index's name, which the migration gives it; a database without it refuses a search.
    static let index = "output_chunks_search"

    /// Why a fleet without the index refuses a search, and how to add it.
    static let missing = BatonError.badRequest("""
        search on a fleet needs PostgreSQL's pg_trgm extension, which the fleet's database does not have: \
        install it on the server (Debian: part of postgresql-15; elsewhere the postgresql-contrib package), \
        then, as the database's owner: CREATE EXTENSION pg_trgm; \
        CREATE INDEX \(index) ON output_chunks USING gin (encode(bytes, 'escape') gin_trgm_ops);
        """)

    /// Whether the database has the trigram index of the output.
    static func isIndexed(on db: PGConnection) throws -> Bool {
        try db.query("SELECT 1 FROM pg_indexes WHERE tablename = 'output_chunks' AND indexname = $1", [index]).first != nil
    }

    /// The runs of `filter` (its limit at most `SearchMatch.maxRuns`) whose output or params
    /// hold `text`; nil when the database has no index to ask.
    static func search(_ text: String, _ filter: HistoryFilter, maxLines: Int = SearchMatch.maxLines,
                       on db: PGConnection) throws -> SearchResult? {
        guard try isIndexed(on: db) else { return nil }
        let search = SearchText(text)
        let limit = min(max(filter.limit, 0), SearchMatch.maxRuns)
        guard !search.folded.isEmpty, limit > 0 else { return SearchResult(matches: []) }
        var byParams = FleetFilterSQL(filter)
        let values = byParams.add(search.likePattern)
        byParams.clauses.append("EXISTS (SELECT 1 FROM jsonb_each_text(params::jsonb) AS p WHERE p.value ILIKE \(values))")
        var runs: [Int64: RunSnapshot] = [:]
        let (found, cut) = try byOutput(pattern(text), filter, limit: limit, indexed: search.usesIndex, on: db)
        for run in try found + byParams.runs(limit: limit, on: db) { runs[run.id] = run }
        let matches = try runs.values.sorted { $0.id > $1.id }.prefix(limit).map { run in
            var lines = MatchingLines(search, maxLines: maxLines)
            for row in try db.query("SELECT start, encode(bytes, 'hex') FROM output_chunks WHERE run_id = $1 ORDER BY start", [String(run.id)]).rows {
                let bytes = PGHex.decode(row[1] ?? ""), start = row[0].flatMap { Int64($0) } ?? 0
                if search.isASCII { lines.take(bytes, folded: bytes.map(SearchText.lower), at: start) } else { lines.take(bytes, at: start) }
            }
            lines.finish()
            let names = run.params.filter { search.isIn($0.value) }.keys.sorted()
            return SearchMatch(run: run, lines: lines.lines, lineCount: lines.count, params: names.isEmpty ? nil : names)
        }
        return SearchResult(matches: matches, cut: cut)
    }

    /// How many of the newest runs are read first, without the index.
    static let newest: Int64 = 100

    /// The runs of the filter with a chunk that holds the text, newest first, up to `limit`. The
    /// newest runs' chunks are read first (a text most runs hold is found there, without
    /// checking every chunk the index names: its trigrams are in all of them); where they hold
    /// too few, the index names the chunks that may hold it, every host's, and the server checks
    /// those. The planner is told to use the index (`enable_seqscan`, `enable_indexscan` off for
    /// that statement): it costs `encode()` and `ILIKE` over a chunk as cheap, and would read
    /// every chunk of a small fleet's history instead.
    ///
    /// A text of fewer than three characters has no trigram for the index to narrow by: it is
    /// looked for in the newest runs only, and the answer says where it stopped (`SearchCut`, as
    /// one host's scan past its budget), rather than reading every host's output. The index's
    /// statement is bounded too (`statementTimeout`).
    static func byOutput(_ pattern: String, _ filter: HistoryFilter, limit: Int, indexed: Bool,
                         on db: PGConnection) throws -> (runs: [RunSnapshot], cut: SearchCut?) {
        guard let newestRun = try db.query("SELECT max(id) FROM runs").first?[0].flatMap({ Int64($0) }) else { return ([], nil) }
        let from = newestRun - newest + 1
        var recent = FleetFilterSQL(filter)
        let mark = recent.add(pattern), low = recent.add(String(from))
        recent.clauses.append("id IN (SELECT run_id FROM output_chunks WHERE run_id >= \(low)::bigint AND encode(bytes, 'escape') ILIKE \(mark))")
        let found = try recent.runs(limit: limit, on: db)
        guard found.count < limit else { return (found, nil) }
        guard indexed else {
            guard try db.query("SELECT 1 FROM output_chunks WHERE run_id < $1::bigint LIMIT 1", [String(from)]).first != nil else { return (found, nil) }
            let read = try db.query("SELECT coalesce(sum(length(bytes)), 0) FROM output_chunks WHERE run_id >= $1::bigint", [String(from)])
            return (found, SearchCut(scannedBytes: read.first?[0].flatMap { Int64($0) } ?? 0, run: from))
        }
        var all = FleetFilterSQL(filter)
        let every = all.add(pattern)
        all.clauses.append("id IN (SELECT run_id FROM output_chunks WHERE encode(bytes, 'escape') ILIKE \(every))")
        return (try db.transaction {
            try db.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off; SET LOCAL statement_timeout = \(statementTimeoutMS)")
            return try all.runs(limit: limit, on: db)
        }, nil)
    }

    /// The most the index's statement may take (a text whose trigrams are in most of a large
    /// fleet's output has the server check it all): past it the search fails, saying so.
    static let statementTimeoutMS = 30_000

    /// The text as an `ILIKE` pattern over `encode(bytes, 'escape')`, found anywhere: a zero or
    /// high byte as that encoding writes it (`\nnn`), a backslash doubled as it doubles it, each
    /// backslash of those escaped for `LIKE`, as are `%` and `_`.
    static func pattern(_ text: String) -> String {
        var pattern = "%"
        for byte in text.utf8 {
            switch byte {
            case 0, 0x80...:
                let octal = String(byte, radix: 8)
                pattern += "\\\\" + String(repeating: "0", count: 3 - octal.count) + octal
            case UInt8(ascii: "\\"): pattern += "\\\\\\\\"
            case UInt8(ascii: "%"), UInt8(ascii: "_"): pattern += "\\" + String(UnicodeScalar(byte))
            default: pattern.unicodeScalars.append(UnicodeScalar(byte))
            }
        }
        return pattern + "%"
    }
}

/// A history filter as SQL over `runs` (its actions, phases, window, page and params), with the
/// arguments it numbers (`$1`…): `FleetHistory.runs` and the searches ask with it.
struct FleetFilterSQL {
    var clauses: [String] = []
    var arguments: [String?] = []
    let reverse: Bool

    init(_ filter: HistoryFilter) {
        reverse = filter.reverse
        if !filter.actions.isEmpty { clauses.append("action IN (\(marks(filter.actions)))") }
        if !filter.phases.isEmpty { clauses.append("phase IN (\(marks(filter.phases.map(\.rawValue))))") }
        if let since = filter.since { clauses.append("queued_at >= \(add(String(since.rawValue)))::bigint") }
        if let until = filter.until { clauses.append("queued_at < \(add(String(until.rawValue)))::bigint") }
        if let after = filter.after { clauses.append("id \(filter.reverse ? ">" : "<") \(add(String(after)))::bigint") }
        for (name, value) in filter.params.sorted(by: { $0.key < $1.key }) {
            clauses.append("params::jsonb ->> \(add(name)) = \(add(value))")
        }
    }

    /// Numbers the values as arguments; their marks, comma-separated.
    private mutating func marks(_ values: [String]) -> String {
        var marks: [String] = []
        for value in values { marks.append(add(value)) }
        return marks.joined(separator: ", ")
    }

    /// Numbers one more argument; its mark.
    mutating func add(_ value: String) -> String {
        arguments.append(value)
        return "$\(arguments.count)"
    }

    /// The first `limit` runs the filter selects, newest first (oldest first with `reverse`).
    func runs(limit: Int, on db: PGConnection) throws -> [RunSnapshot] {
        var query = self
        let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
        let mark = query.add(String(max(limit, 0)))
        return try db.query("SELECT \(FleetRows.runColumns) FROM runs \(whereClause) ORDER BY id \(reverse ? "ASC" : "DESC") LIMIT \(mark)::bigint",
                            query.arguments).rows.map(FleetRows.run)
    }
}
