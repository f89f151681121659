import BatonCore
import FoundationEssentials

/// The runs that may hold a search's text, newest first, a batch at a time, each batch older
/// than the last: the runs of a filter whose output the server finds the text in (`ILIKE` over
/// `encode(bytes, 'escape')`, which may match falsely: `FleetSearch.match` checks) or whose
/// param values hold it. Without the trigram index (or for a text it cannot narrow by) the
/// newest runs with output are read `FleetSearch.window` at a time until `budget` bytes of output
/// were read, then `cut` says where it stopped (the older runs' params are still asked, as one
/// host's scan asks them); with it, the newest window is read first (a text most runs
/// hold is found there, without checking every chunk the index names), then the index names the
/// chunks, `limit` runs a batch.
struct FleetSearchCandidates {
    let pattern: String
    let like: String
    let filter: HistoryFilter
    let limit: Int
    let budget: Int64
    let indexed: Bool
    let lowest: Int64
    /// The runs below this id are yet to be read.
    private(set) var high: Int64
    private(set) var scanned: Int64 = 0
    private(set) var windows = 0
    private(set) var cut: SearchCut?
    private var done = false
    /// Past the budget: the runs below this id are asked for their params only, then no more.
    private var paramsOnlyBelow: Int64?

    init(_ search: SearchText, _ pattern: String, _ filter: HistoryFilter, limit: Int, budget: Int64, on db: PGConnection) throws {
        self.pattern = pattern
        like = search.likePattern
        var filter = filter
        filter.reverse = false
        let after = filter.after
        filter.after = nil
        self.filter = filter
        self.limit = limit
        self.budget = budget
        indexed = search.usesIndex ? try FleetSearch.isIndexed(on: db) : false
        let range = try db.query("SELECT min(id), max(id) FROM runs").first
        lowest = range?[0].flatMap { Int64($0) } ?? 0
        let newest = range?[1].flatMap { Int64($0) }
        high = min((newest ?? 0) + 1, after ?? .max)
        done = newest == nil || high <= lowest
    }

    /// The next batch, nil when there is none.
    mutating func next(on db: PGConnection) throws -> [RunSnapshot]? {
        guard !done else { return nil }
        if let below = paramsOnlyBelow {
            done = true
            return try byParams(below: below, on: db)
        }
        if !indexed || windows == 0 { return try scanWindow(on: db) }
        return try indexedBatch(on: db)
    }

    /// The runs of the next window (from the `window`-th newest run with output below `high`; the
    /// rest when no output is left) whose output the server finds the text in by reading it.
    private mutating func scanWindow(on db: PGConnection) throws -> [RunSnapshot] {
        let next = try db.query("""
            SELECT min(run_id) FROM (SELECT run_id FROM output_chunks WHERE run_id < $1::bigint
                                     GROUP BY run_id ORDER BY run_id DESC LIMIT $2::bigint) AS w
            """, [String(high), String(FleetSearch.window)]).first?[0].flatMap { Int64($0) }
        let low = min(max(next ?? lowest, lowest), high - 1)
        windows += 1
        var query = FleetFilterSQL(filter)
        let (from, to) = (query.add(String(low)), query.add(String(high)))
        let (mark, byParam) = (query.add(pattern), query.add(like))
        query.clauses.append("id >= \(from)::bigint AND id < \(to)::bigint")
        query.clauses.append("""
            (id IN (SELECT run_id FROM output_chunks WHERE run_id >= \(from)::bigint AND run_id < \(to)::bigint \
            AND encode(bytes, 'escape') ILIKE \(mark)) \
            OR EXISTS (SELECT 1 FROM jsonb_each_text(params::jsonb) AS p WHERE p.value ILIKE \(byParam)))
            """)
        let runs = try query.runs(limit: limit, on: db)
        // A window with more candidates than the limit is read on from the last one next time.
        let reached = runs.count == limit ? runs[runs.count - 1].id : low
        let read = try db.query("SELECT coalesce(sum(length(bytes)), 0) FROM output_chunks WHERE run_id >= $1::bigint AND run_id < $2::bigint",
                                [String(reached), String(high)])
        scanned += read.first?[0].flatMap { Int64($0) } ?? 0
        high = reached
        if high <= lowest {
            done = true
        } else if !indexed && scanned >= budget {
            paramsOnlyBelow = reached
            cut = SearchCut(scannedBytes: scanned, run: reached)
        }
        return runs
    }

    /// The newest `limit` runs below `below` whose param values hold the text.
    private func byParams(below: Int64, on db: PGConnection) throws -> [RunSnapshot] {
        var query = FleetFilterSQL(filter)
        let (under, value) = (query.add(String(below)), query.add(like))
        query.clauses += ["id < \(under)::bigint", "EXISTS (SELECT 1 FROM jsonb_each_text(params::jsonb) AS p WHERE p.value ILIKE \(value))"]
        return try query.runs(limit: limit, on: db)
    }

    /// The next `limit` runs below `high` whose chunks the index names and the server checks, or
    /// whose params hold the text. The planner is told to use the index (`enable_seqscan`,
    /// `enable_indexscan` off for that statement): it costs `encode()` and `ILIKE` over a chunk
    /// as cheap, and would read every chunk of a small fleet's history instead.
    private mutating func indexedBatch(on db: PGConnection) throws -> [RunSnapshot] {
        var byOutput = FleetFilterSQL(filter)
        let (below, mark) = (byOutput.add(String(high)), byOutput.add(pattern))
        byOutput.clauses += ["id < \(below)::bigint", "id IN (SELECT run_id FROM output_chunks WHERE encode(bytes, 'escape') ILIKE \(mark))"]
        try db.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off")
        let found = try byOutput.runs(limit: limit, on: db)
        try db.execute("SET LOCAL enable_seqscan TO DEFAULT; SET LOCAL enable_indexscan TO DEFAULT")
        var union: [Int64: RunSnapshot] = [:]
        for run in try found + byParams(below: high, on: db) { union[run.id] = run }
        let batch = Array(union.values.sorted { $0.id > $1.id }.prefix(limit))
        if union.count < limit || batch.isEmpty { done = true } else { high = batch[batch.count - 1].id }
        return batch
    }
}
