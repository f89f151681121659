import BatonCore
@testable import BatonFleet
import Foundation
import Testing

/// The fleet search's bounds (review of issue 42's fleet search): the scan reads only the
/// filter's runs, a window of bytes at a time, each once; the index's search has a budget too;
/// the index is made without the session's timeouts; a full queue says so as one host does.
extension FleetSearchTests {
    /// Runs 3…`last` of one action, `job` (its one key), queued at their ids, each with one chunk of
    /// output: `output`, an SQL expression of the run's id `n` giving its bytes.
    static func jobRuns(through last: Int, output: String) throws -> PGConnection {
        let (_, db) = try FleetArtifactRowsTests.database()
        try db.execute("""
            INSERT INTO keys (key) VALUES ('job');
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation)
                SELECT n, 'job', 'job', 'success', 'queue', n, 'web-1', 'x' FROM generate_series(3, \(last)) AS n;
            INSERT INTO output_chunks (run_id, start, stream, at, bytes)
                SELECT n, 0, 1, n, \(output) FROM generate_series(3, \(last)) AS n;
            """)
        return db
    }

    /// Runs 3…52 of `rare` ("quiet", run 3 "rare zq here"), 53…202 of `job` ("plain"), queued at their ids.
    static func twoActions() throws -> (String, PGConnection) {
        let (conninfo, db) = try FleetArtifactRowsTests.database()
        try db.execute("""
            INSERT INTO keys (key) VALUES ('job'), ('rare');
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation)
                SELECT n, CASE WHEN n <= 52 THEN 'rare' ELSE 'job' END, CASE WHEN n <= 52 THEN 'rare' ELSE 'job' END,
                       'success', 'queue', n, 'web-1', 'x' FROM generate_series(3, 202) AS n;
            INSERT INTO output_chunks (run_id, start, stream, at, bytes)
                SELECT n, 0, 1, n, convert_to(CASE WHEN n = 3 THEN 'rare zq here' WHEN n <= 52 THEN 'quiet' ELSE 'plain' END || chr(10), 'UTF8')
                FROM generate_series(3, 202) AS n;
            """)
        return (conninfo, db)
    }

    @Test("the scan reads and counts only the filter's runs: a rare action or --until goes further back, and the cut names none of another action's runs")
    func scanFollowsTheFilter() throws {
        let (_, db) = try Self.twoActions()
        // 150 newer runs of job hold 900 bytes: a budget of 500 once cut at run 103 with nothing found.
        let rare = try FleetSearch.search("ZQ here", HistoryFilter(actions: ["rare"], limit: 20), budget: 500, on: db)
        #expect(rare.matches.map(\.run.id) == [3] && rare.cut == nil, "\(rare)")
        let until = try FleetSearch.search("ZQ here", HistoryFilter(until: Timestamp(rawValue: 60), limit: 20), budget: 500, on: db)
        #expect(until.matches.map(\.run.id) == [3] && until.cut == nil, "\(until)")
        // Cut within rare's runs, counting rare's bytes only: 16 runs (96 bytes), then one more.
        let cut = try FleetSearch.search("ZQ here", HistoryFilter(actions: ["rare"], limit: 20), budget: 100, on: db)
        #expect(cut.matches.isEmpty && cut.cut == SearchCut(scannedBytes: 102, run: 36), "\(cut)")
    }

    @Test("a scan's window ends at a byte total, every window counted, none read twice when it holds more than the limit")
    func windowsOfBytes() throws {
        let (_, db) = try Self.twoActions()
        let text = SearchText("plain")
        var candidates = try FleetSearchCandidates(text, FleetSearch.pattern(text), HistoryFilter(limit: 5), limit: 5,
                                                   budget: 1_000, windowBytes: 60, on: db)
        let first = try candidates.next(on: db)
        #expect(first?.map(\.id) == Array((193...202).reversed()) && candidates.high == 193 && candidates.scanned == 60)
        let second = try candidates.next(on: db)
        #expect(second?.map(\.id) == Array((183...192).reversed()) && candidates.high == 183 && candidates.scanned == 120)
        // A run bigger than a window is read alone.
        try db.query("UPDATE output_chunks SET bytes = convert_to(repeat('plain ', 20), 'UTF8') WHERE run_id = 182")
        #expect(try candidates.next(on: db)?.map(\.id) == [182] && candidates.scanned == 240)
    }

    @Test("the index's search has a budget: false matches (an em dash's \\200 for 200) end in a cut, not a walk of the whole history")
    func indexedBudget() throws {
        let db = try Self.jobRuns(through: 8, output: "convert_to(CASE WHEN n <= 4 THEN 'HTTP 200 ok' ELSE 'HTTP — ok' END || chr(10), 'UTF8')")
        #expect(try FleetSearch.makeIndex(on: db) == .made)
        // The first window is run 8 (12 bytes); then one run a batch, each 12 bytes, until 30 are passed.
        let found = try FleetSearch.search("200", HistoryFilter(limit: 1), budget: 30, windowBytes: 12, on: db)
        #expect(found.matches.isEmpty && found.cut == SearchCut(scannedBytes: 36, run: 6), "\(found)")
        #expect(try FleetSearch.search("200", HistoryFilter(limit: 1), windowBytes: 12, on: db).matches.map(\.run.id) == [4])
    }

    @Test("the index is made on a session whose statement_timeout would cancel it")
    func indexWithoutTimeouts() throws {
        let db = try Self.jobRuns(through: 3002, output: "convert_to(repeat(md5(n::text) || chr(10), 20), 'UTF8')")
        try db.execute("SET statement_timeout = 1")
        #expect(try FleetSearch.makeIndex(on: db) == .made)
        #expect(try FleetSearch.isIndexed(on: db))
    }

    @Test("a full search queue says how many searches wait on this host, with one host's code for it")
    func fullQueue() async throws {
        let (conninfo, _) = try FleetArtifactRowsTests.database()
        let worker = PGWorker(name: "test-search", conninfo: conninfo, defaults: [:], capacity: 2)
        let held = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        defer { _ = worker.close(timeout: .seconds(1)) }
        defer { for _ in 0..<3 { held.signal() } }
        worker.submit({ _ in started.signal(); held.wait() }, completion: { _ in })
        try #require(started.wait(timeout: .now() + 60) == .success, "the held job began within 60 s (a connection)")
        for _ in 0..<2 { worker.submit({ _ in held.wait() }, completion: { _ in }) }
        await #expect(throws: BatonError.storeUnavailable("2 searches already wait on this host")) {
            try await FleetHistory.search("x", HistoryFilter(limit: 1), on: worker, stop: { false })
        }
    }
}
