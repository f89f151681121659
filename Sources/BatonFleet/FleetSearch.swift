import BatonCore
import FoundationEssentials

/// `baton search` across the fleet: the runs whose kept output or param values hold a text,
/// newest first, each with its matching lines and their numbers, as one host's history answers
/// (`History.search`). The server names the runs that may hold the text, asking `ILIKE` over
/// each chunk as text (`encode(bytes, 'escape')`, case ignored): through a `pg_trgm` GIN index
/// where a host's config made it (`search: "index"`, `FleetSearch.makeIndex`), else by reading
/// the filter's newest output, a window of runs (and of bytes) at a time, up to a budget of
/// bytes, saying where it stopped (`SearchCut`), as one host's `search: "scan"` does; the runs the
/// index names are counted against the same budget. The lines are then found in those
/// runs' chunks as one host finds them (`MatchingLines`), and a run where none holds the text
/// nor any param value (a false match of the encoding: `—` is `\342\200\224`, so `200` matched
/// it) is dropped, the next ones read to fill the limit. As there, a chunk holds the text whole.
///
/// The whole search is one read-only transaction, each statement bounded
/// (`statementTimeoutMS`), on a connection of its own (`FleetStore`: one search at a time, never
/// on the pool that starts, cancels and approves runs); `stop` (the asker went away) is asked
/// between statements, and the search answers what it found so far. Rights are the service's:
/// it asks for the actions the peer may read only.
enum FleetSearch {
    /// The most one statement of a search may take: past it the search fails, saying so.
    static let statementTimeoutMS = 30_000

    /// How many runs' output a scan reads at a time at most (and the index's search reads first).
    static let window: Int64 = 100

    /// How many bytes of output one statement of a scan reads at most (a window ends at the run
    /// that reaches it; a bigger run is read alone), well within `statementTimeoutMS`.
    static let windowBytes: Int64 = 32 << 20

    /// The runs of `filter` (its limit at most `SearchMatch.maxRuns`) whose output or params
    /// hold `text`. Without the index (or for a text under three characters, which has no trigram
    /// to narrow by) at most about `budget` bytes of the newest output are read.
    static func search(_ text: String, _ filter: HistoryFilter, maxLines: Int = SearchMatch.maxLines,
                       budget: Int64 = Int64(SearchMatch.maxScannedBytes), windowBytes: Int64 = windowBytes, stop: () -> Bool = { false },
                       on db: PGConnection) throws -> SearchResult {
        let search = SearchText(text)
        let limit = min(max(filter.limit, 0), SearchMatch.maxRuns)
        guard !search.folded.isEmpty, limit > 0 else { return SearchResult(matches: []) }
        let opening: [(sql: String, parameters: [String?])] = [("SET TRANSACTION READ ONLY", []),
                                                               ("SET LOCAL statement_timeout = \(statementTimeoutMS)", [])]
        return try db.transaction(opening: opening) { _ in
            var candidates = try FleetSearchCandidates(search, pattern(search), filter, limit: limit, budget: budget,
                                                   windowBytes: windowBytes, on: db)
            var matches: [SearchMatch] = []
            while matches.count < limit, !stop(), let batch = try candidates.next(on: db) {
                for run in batch where matches.count < limit && !stop() {
                    if let match = try match(run, search, maxLines: maxLines, on: db) { matches.append(match) }
                }
            }
            return SearchResult(matches: matches, cut: candidates.cut)
        }
    }

    /// The run as a match: the lines of its output that hold the text and the params whose
    /// values do; nil when neither does (the server's `ILIKE` over the encoding matched falsely).
    static func match(_ run: RunSnapshot, _ search: SearchText, maxLines: Int, on db: PGConnection) throws -> SearchMatch? {
        var lines = MatchingLines(search, maxLines: maxLines)
        for row in try db.query("SELECT start, encode(bytes, 'hex') FROM output_chunks WHERE run_id = $1 ORDER BY start", [String(run.id)]).rows {
            let bytes = PGHex.decode(row[1] ?? ""), start = row[0].flatMap { Int64($0) } ?? 0
            if search.isASCII { lines.take(bytes, folded: bytes.map(SearchText.lower), at: start) } else { lines.take(bytes, at: start) }
        }
        lines.finish()
        let names = run.params.filter { search.isIn($0.value) }.keys.sorted()
        guard lines.count > 0 || !names.isEmpty else { return nil }
        return SearchMatch(run: run, lines: lines.lines, lineCount: lines.count, params: names.isEmpty ? nil : names)
    }

    /// The text as an `ILIKE` pattern over `encode(bytes, 'escape')`, found anywhere: a zero or
    /// high byte as that encoding writes it (`\nnn`), a backslash doubled as it doubles it, each
    /// backslash of those escaped for `LIKE`, as are `%` and `_`. A text beyond ASCII, whose
    /// bytes the encoding writes as digits that no collation folds, is looked for by its ASCII
    /// `pieces` in order (`SearchText.widePattern`); `match` decides, lowercasing as one host does.
    static func pattern(_ search: SearchText) -> String {
        "%" + search.pieces.map { escaped($0) + "%" }.joined()
    }

    /// A piece of text as `encode(bytes, 'escape')` writes it, escaped for `LIKE`.
    static func escaped(_ text: String) -> String {
        var pattern = ""
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
        return pattern
    }
}
