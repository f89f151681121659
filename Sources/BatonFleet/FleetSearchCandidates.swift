import BatonCore
import FoundationEssentials

/// The runs that may hold a search's text, newest first, a batch at a time, each batch older
/// than the last: the runs of a filter (its actions, which are the ones the peer may read, its
/// window, phases and params) whose output the server finds the text in (`ILIKE` over
/// `encode(bytes, 'escape')`, which may match falsely: `FleetSearch.match` checks) or whose
/// param values hold it. Only the filter's runs are read and counted, from its newest (below
/// `--until`): a rare action or an old window is searched as far back as a common one.
///
/// Without the trigram index (or for a text it cannot narrow by) the filter's newest runs with
/// output are read a window at a time (at most `FleetSearch.window` runs and `windowBytes` bytes,
/// or what is left of `budget`; each run read once) until `budget` bytes were read, then `cut`
/// says where it stopped (the older runs' params are still asked, as one host's scan asks them).
/// With it, the newest window is read first (a text most runs hold is found there, without
/// checking every chunk the index names), then the index names the chunks, `limit` runs a batch,
/// the bytes of their output counted against the same budget (false matches may name many).
struct FleetSearchCandidates {
    let search: SearchText
    let pattern: String
    let like: String
    let filter: HistoryFilter
    let limit: Int
    let budget: Int64
    let windowBytes: Int64
    let indexed: Bool
    /// The runs below this id are yet to be read.
    private(set) var high: Int64
    /// The bytes of output read (scan) or named (index) so far.
    private(set) var scanned: Int64 = 0
    private(set) var windows = 0
    private(set) var cut: SearchCut?
    private var done = false
    /// Past the budget: the runs below this id are asked for their params only, then no more.
    private var paramsOnlyBelow: Int64?

    init(_ search: SearchText, _ pattern: String, _ filter: HistoryFilter, limit: Int, budget: Int64,
         windowBytes: Int64 = FleetSearch.windowBytes, on db: PGConnection) throws {
        self.search = search
        self.pattern = pattern
        like = search.widePattern
        var filter = filter
        filter.reverse = false
        let after = filter.after
        filter.after = nil
        self.filter = filter
        self.limit = limit
        self.budget = budget
        self.windowBytes = max(windowBytes, 1)
        // pg_trgm narrows by the trigrams of the pattern's pieces: none of three characters, nothing to narrow by.
        indexed = search.pieces.contains { $0.unicodeScalars.count >= 3 } ? try FleetSearch.isIndexed(on: db) : false
        // The filter's newest run (with `--until`, the newest queued before it).
        let query = FleetFilterSQL(filter)
        let newest = try db.query("SELECT max(id) FROM runs \(query.whereClause)", query.arguments).first?[0].flatMap { Int64($0) }
        high = min((newest ?? 0) + 1, after ?? .max)
        done = newest == nil
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

    /// The next window below `high`: the filter's newest runs with output, at most
    /// `FleetSearch.window` of them and `room` bytes (at least one run); its lowest id, its bytes
    /// and its runs' ids (as a PostgreSQL array). Nil when none of the filter's runs below `high`
    /// has output.
    private func window(room: Int64, on db: PGConnection) throws -> (low: Int64, bytes: Int64, ids: String)? {
        var query = FleetFilterSQL(filter)
        let (below, count, most) = (query.add(String(high)), query.add(String(FleetSearch.window)), query.add(String(room)))
        query.clauses += ["id < \(below)::bigint", "EXISTS (SELECT 1 FROM output_chunks c WHERE c.run_id = runs.id)"]
        let row = try db.query("""
            SELECT min(id), sum(size), array_agg(id) FROM (
              SELECT id, size, sum(size) OVER (ORDER BY id DESC) AS total, row_number() OVER (ORDER BY id DESC) AS n FROM (
                SELECT id, (SELECT sum(length(c.bytes)) FROM output_chunks c WHERE c.run_id = runs.id) AS size
                FROM runs \(query.whereClause) ORDER BY id DESC LIMIT \(count)::bigint) AS r) AS w
            WHERE total <= \(most)::bigint OR n = 1
            """, query.arguments).first
        guard let low = row?[0].flatMap({ Int64($0) }) else { return nil }
        return (low, row?[1].flatMap { Int64($0) } ?? 0, row?[2] ?? "{}")
    }

    /// The runs of the next window whose output the server finds the text in by reading it, or
    /// whose params hold it (those without output too, down to the window's oldest run).
    private mutating func scanWindow(on db: PGConnection) throws -> [RunSnapshot] {
        windows += 1
        let room = indexed ? windowBytes : min(windowBytes, max(budget - scanned, 1))
        guard let (low, bytes, ids) = try window(room: room, on: db) else {
            // No output left: the older runs can hold the text in their params only.
            done = true
            return try byParams(below: high, on: db)
        }
        var query = FleetFilterSQL(filter)
        let (from, to, window) = (query.add(String(low)), query.add(String(high)), query.add(ids))
        let (mark, byParam) = (query.add(pattern), query.add(like))
        query.clauses.append("id >= \(from)::bigint AND id < \(to)::bigint")
        query.clauses.append("""
            (EXISTS (SELECT 1 FROM output_chunks c WHERE c.run_id = runs.id AND c.run_id = ANY(\(window)::bigint[]) \
            AND encode(c.bytes, 'escape') ILIKE \(mark)) \
            OR EXISTS (SELECT 1 FROM jsonb_each_text(params::jsonb) AS p WHERE p.value ILIKE \(byParam)))
            """)
        // Each run's own chunks (at most the window's, whichever plan), every candidate of the window at
        // once: the next window starts below it, none is read twice.
        let runs = try query.runs(limit: Int(Int32.max), on: db)
        scanned += bytes
        high = low
        if !indexed && scanned >= budget {
            paramsOnlyBelow = low
            cut = SearchCut(scannedBytes: scanned, run: low)
        }
        return runs
    }

    /// The newest `limit` runs below `below` whose param values hold the text: those `ILIKE`
    /// names (`widePattern`, whatever the collation folds), a page at a time, that `isIn` takes.
    private func byParams(below: Int64, on db: PGConnection) throws -> [RunSnapshot] {
        var (found, below) = ([RunSnapshot](), below)
        while true {
            var query = FleetFilterSQL(filter)
            let (under, value) = (query.add(String(below)), query.add(like))
            query.clauses += ["id < \(under)::bigint", "EXISTS (SELECT 1 FROM jsonb_each_text(params::jsonb) AS p WHERE p.value ILIKE \(value))"]
            let page = try query.runs(limit: limit, on: db)
            found += page.filter { $0.params.values.contains(where: search.isIn) }
            guard found.count < limit, page.count == limit, let last = page.last else { return Array(found.prefix(limit)) }
            below = last.id
        }
    }

    /// The next `limit` runs below `high` whose chunks the index names and the server checks, or
    /// whose params hold the text; past `budget` bytes of the named runs' output, `cut` says
    /// where it stopped. The planner is told to use the index (`enable_seqscan`,
    /// `enable_indexscan` off for that statement): it costs `encode()` and `ILIKE` over a chunk
    /// as cheap, and would read every chunk of a small fleet's history instead.
    private mutating func indexedBatch(on db: PGConnection) throws -> [RunSnapshot] {
        var byOutput = FleetFilterSQL(filter)
        let (below, mark) = (byOutput.add(String(high)), byOutput.add(pattern))
        byOutput.clauses += ["id < \(below)::bigint",
                             "id IN (SELECT run_id FROM output_chunks WHERE run_id < \(below)::bigint AND encode(bytes, 'escape') ILIKE \(mark))"]
        try db.execute("SET LOCAL enable_seqscan = off; SET LOCAL enable_indexscan = off")
        let found = try byOutput.runs(limit: limit, on: db)
        try db.execute("SET LOCAL enable_seqscan TO DEFAULT; SET LOCAL enable_indexscan TO DEFAULT")
        var union: [Int64: RunSnapshot] = [:]
        for run in try found + byParams(below: high, on: db) { union[run.id] = run }
        let batch = Array(union.values.sorted { $0.id > $1.id }.prefix(limit))
        let named = "{" + found.map { String($0.id) }.joined(separator: ",") + "}"
        scanned += try db.query("SELECT coalesce(sum(length(bytes)), 0) FROM output_chunks WHERE run_id = ANY($1::bigint[])", [named])
            .first?[0].flatMap { Int64($0) } ?? 0
        if union.count < limit || batch.isEmpty {
            done = true
            return batch
        }
        high = batch[batch.count - 1].id
        if scanned >= budget {
            paramsOnlyBelow = high
            cut = SearchCut(scannedBytes: scanned, run: high)
        }
        return batch
    }
}
