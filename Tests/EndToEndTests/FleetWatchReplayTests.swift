import BatonCore
@testable import BatonFleet
import Foundation
import Testing

/// The fleet's history answers a watch's replay as SQLite's does (`FleetHistory.transitions`),
/// against a real PostgreSQL: every host's transitions after the cursor, oldest first, bounded.
@Suite("End to end: the fleet's watch replay", .offPool)
struct FleetWatchReplayTests {
    /// Runs 1 and 3 of `a`, 2 of `b`, each queued, loading, success; rows written out of time order.
    static func history() throws -> (conninfo: String, db: PGConnection) {
        let conninfo = try Postgres.server().database()
        let db = try PGConnection(conninfo)
        _ = try FleetSchema.migrate(db)
        try db.execute("""
            INSERT INTO keys (key) VALUES ('a'), ('b');
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES
                (1, 'a', 'a', 'success', 'reject', 100, 'web-1', 'web-1/1/aa'), (2, 'b', 'b', 'success', 'reject', 200, 'web-2', 'web-2/2/bb'),
                (3, 'a', 'a', 'success', 'reject', 150, 'web-1', 'web-1/1/aa');
            INSERT INTO transitions (run_id, seq, from_phase, to_phase, at) VALUES
                (3, 1, NULL, 'queued', 150), (3, 2, 'queued', 'loading', 300), (3, 3, 'loading', 'success', 500),
                (1, 1, NULL, 'queued', 100), (1, 2, 'queued', 'loading', 200), (1, 3, 'loading', 'success', 300),
                (2, 1, NULL, 'queued', 200), (2, 2, 'queued', 'loading', 250), (2, 3, 'loading', 'success', 400)
            """)
        return (conninfo, db)
    }

    static func keys(_ replay: Replay) -> [String] {
        replay.updates.map { "\($0.run.id).\($0.transition!.seq)@\($0.transition!.at.rawValue)" }
    }

    @Test("after a cursor: each later transition once, by time, run, sequence, with its run; of one action; bounded to the newest with the count left out")
    func replay() async throws {
        let (conninfo, _) = try Self.history()
        let history = FleetHistory(pool: PGPool(conninfo: conninfo, defaults: [:]))
        let cursor = WatchCursor(at: Timestamp(rawValue: 200), run: 1, seq: 2)
        let all = try await history.transitions(after: cursor, action: nil, limit: 100)
        #expect(Self.keys(all) == ["2.1@200", "2.2@250", "1.3@300", "3.2@300", "2.3@400", "3.3@500"])
        #expect(all.skipped == 0 && all.updates.first?.run.action == "b" && all.updates.allSatisfy { $0.run.phase == .success })
        #expect(Self.keys(try await history.transitions(after: cursor, action: "a", limit: 100)) == ["1.3@300", "3.2@300", "3.3@500"])
        let start = WatchCursor(at: Timestamp(rawValue: 100), run: 1, seq: 1)
        let bounded = try await history.transitions(after: start, action: nil, limit: 3)
        #expect(Self.keys(bounded) == ["3.2@300", "2.3@400", "3.3@500"])
        #expect(bounded.skipped == 5)
        let boundedA = try await history.transitions(after: start, action: "a", limit: 2)
        #expect(Self.keys(boundedA) == ["3.2@300", "3.3@500"] && boundedA.skipped == 3)
        #expect(try await history.transitions(after: start, action: nil, limit: 8).skipped == 0)
        #expect(try await history.transitions(after: WatchCursor(at: Timestamp(rawValue: 500), run: 3, seq: 3), action: nil, limit: 8).updates.isEmpty)
    }
}
