import BatonCore
@testable import BatonStore
import Foundation
import Testing

@Suite("Retention")
struct RetentionTests {
    static let day: Int64 = 86_400_000_000
    static let now = Timestamp(microseconds: 1_000 * day)

    /// Writes a run through the journal: queued, and (unless in flight) loading and its end, `age` days ago.
    static func run(_ store: Store, id: Int64, action: String, phase: Phase, ageDays: Int64) async {
        let at = Timestamp(microseconds: now.rawValue - ageDays * day)
        let snapshot = RunSnapshot(id: id, action: action, key: action, phase: .queued, policy: .reject, params: [:],
                                   trigger: nil, queuedAt: at)
        var entries: [JournalEntry] = [.created(snapshot, Transition(runID: id, seq: 1, from: nil, to: .queued, at: at, detail: .init()))]
        if phase != .queued {
            entries.append(.transition(Transition(runID: id, seq: 2, from: .queued, to: .loading, at: at, detail: .init(attempt: 1))))
        }
        if phase.isTerminal {
            entries.append(.transition(Transition(runID: id, seq: 3, from: .loading, to: phase, at: at, detail: .init())))
            entries.append(.output(runID: id, tail: Array("out".utf8), truncated: false))
            // `id * 10` bytes of output chunks, in two chunks.
            let bytes = [UInt8](repeating: 7, count: Int(id) * 5)
            entries.append(.outputChunks(OutputWrite(
                runID: id, chunks: [OutputChunk(start: 0, stream: .stdout, at: at, bytes: bytes),
                                    OutputChunk(start: id * 5, stream: .stderr, at: at, bytes: bytes)],
                removeBefore: nil, head: 1_000, total: id * 10, dropped: 0)))
        }
        entries.append(.trigger(TriggerRecord(runID: id, action: action, key: action, decision: .rejected, policy: .reject,
                                              peer: nil, at: at, params: [:])))
        _ = await store.commit(entries)
    }

    func remaining(_ path: String) throws -> (runs: [Int64], orphans: Int64) {
        let connection = try Connection(path: path, readOnly: true)
        let ids = try connection.withStatement("SELECT id FROM runs ORDER BY id") { statement in
            var ids: [Int64] = []
            while try statement.step() { ids.append(statement.int64(0)!) }
            return ids
        }
        let orphans = try connection.scalar("""
            SELECT (SELECT count(*) FROM transitions WHERE run_id NOT IN (SELECT id FROM runs))
                 + (SELECT count(*) FROM triggers WHERE run_id NOT IN (SELECT id FROM runs))
                 + (SELECT count(*) FROM outputs WHERE run_id NOT IN (SELECT id FROM runs))
                 + (SELECT count(*) FROM output_chunks WHERE run_id NOT IN (SELECT id FROM runs))
                 + (SELECT count(*) FROM output_totals WHERE run_id NOT IN (SELECT id FROM runs))
            """)?.int64 ?? -1
        return (ids, orphans)
    }

    @Test("age, failure age and count limits remove exactly the runs they should; in-flight runs stay; overrides apply")
    func prune() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        // backup: 1-4 success at 100, 50, 5, 1 days; 5 failure at 50 days; 6 failure at 400 days;
        // 7 loading since 500 days (in flight: never removed); 8 queued at 600 days.
        for (id, phase, age) in [(1, Phase.success, 100), (2, .success, 50), (3, .success, 5), (4, .cancelled, 1),
                                 (5, .failure, 50), (6, .failure, 400), (7, .loading, 500), (8, .queued, 600)] {
            await Self.run(store, id: Int64(id), action: "backup", phase: phase, ageDays: Int64(age))
        }
        // deploy: 9-14 successes, 1 day old each: only the count limit (override: 2) applies.
        for id in 9...14 { await Self.run(store, id: Int64(id), action: "deploy", phase: .success, ageDays: 1) }

        let retention = Retention(maxAge: .seconds(30 * 86_400), keepFailures: .seconds(365 * 86_400), maxRunsPerAction: 100)
        let overrides = ["deploy": Retention.Override(maxRunsPerAction: 2)]

        // Artifacts: run 1 (removed) keeps 1000 + 24 bytes in two files, run 13 (kept) 7.
        let writer = try Connection(path: dir.file("h.sqlite"))
        try writer.execute("""
            INSERT INTO artifacts (run_id, attempt, name, size, sha256, type, at, kept) VALUES
              (1, 1, 'a.tar', 1000, '00', 'application/x-tar', 0, 1), (1, 1, 'b.txt', 24, '00', 'text/plain', 0, 1),
              (13, 1, 'c.txt', 7, '00', 'text/plain', 0, 1)
            """)
        let dry = try await store.prune(retention: retention, overrides: overrides, now: Self.now, dryRun: true)
        #expect(dry.removed == ["backup": 3, "deploy": 4])
        #expect(dry.artifactBytes == 1_024)
        // Runs 1, 2, 6 and 9 to 12 keep id * 10 bytes of output each.
        let outputBytes: Int64 = 510
        #expect(dry.outputBytes == outputBytes)
        #expect(try remaining(dir.file("h.sqlite")).runs == Array(1...14))

        let report = try await store.prune(retention: retention, overrides: overrides, now: Self.now, batchSize: 2)
        #expect(report.removed == ["backup": 3, "deploy": 4])
        #expect(report.dryRun == false)
        let left = try remaining(dir.file("h.sqlite"))
        // Removed: 1 and 2 (success older than 30 days), 6 (failure older than 365 days), 9-12 (beyond 2 deploys).
        #expect(left.runs == [3, 4, 5, 7, 8, 13, 14])
        #expect(left.orphans == 0)

        let again = try await store.prune(retention: retention, overrides: overrides, now: Self.now)
        #expect(again.total == 0)
        store.close()
    }

    @Test("the count limit keeps the newest ended runs of each action, whatever their outcome")
    func countLimit() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        for id in 1...10 {
            await Self.run(store, id: Int64(id), action: "a", phase: id % 3 == 0 ? .failure : .success, ageDays: 0)
        }
        let report = try await store.prune(retention: Retention(maxRunsPerAction: 3), now: Self.now, batchSize: 4)
        #expect(report.removed == ["a": 7])
        #expect(try remaining(dir.file("h.sqlite")).runs == [8, 9, 10])
        store.close()
    }

    @Test("a run a webhook delivery made within 24 hours outlives every limit; an older delivery's run goes, its row with it")
    func deliveriesKept() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        defer { store.close() }
        // 1: two days old, by a delivery then; 2: now, by a delivery now; 3: now, from the socket.
        for (id, age) in [(Int64(1), Int64(2)), (2, 0), (3, 0)] { await Self.run(store, id: id, action: "hook", phase: .success, ageDays: age) }
        for (id, age) in [(Int64(1), Int64(2)), (2, 0)] {
            let at = Timestamp(microseconds: Self.now.rawValue - age * Self.day)
            try await store.commit([.delivery(Delivery(hook: "gh", id: "d\(id)"), runID: id, at: at)]).get()
        }
        let retention = Retention(maxAge: .seconds(60), keepFailures: .seconds(60), maxRunsPerAction: 1)
        let later = Self.now + .seconds(3_600)
        let dry = try await store.prune(retention: retention, now: later, dryRun: true)
        #expect(dry.removed == ["hook": 2])
        let report = try await store.prune(retention: retention, now: later)
        #expect(report.removed == ["hook": 2])
        #expect(try remaining(dir.file("h.sqlite")).runs == [2])
        #expect(try await store.run(ofDelivery: "d1", hook: "gh") == nil)
        #expect(try await store.run(ofDelivery: "d2", hook: "gh") == 2)
    }

    @Test("a success within its action's cooldown outlives every limit (a key cools on it and a cooled trigger names it); older ones and failures go")
    func coolingKept() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        defer { store.close() }
        // 1: a success 3 days old; 2: a success now; 3: a failure now; 4: a success now (the newest).
        for (id, phase, age) in [(Int64(1), Phase.success, Int64(3)), (2, .success, 0), (3, .failure, 0), (4, .success, 0)] {
            await Self.run(store, id: id, action: "c", phase: phase, ageDays: age)
        }
        let retention = Retention(maxRunsPerAction: 1)
        let dry = try await store.prune(retention: retention, cooling: ["c": .seconds(2 * 86_400)], now: Self.now, dryRun: true)
        #expect(dry.removed == ["c": 2])
        let report = try await store.prune(retention: retention, cooling: ["c": .seconds(2 * 86_400)], now: Self.now)
        #expect(report.removed == ["c": 2])
        #expect(try remaining(dir.file("h.sqlite")).runs == [2, 4])
        // Without a cooldown the count limit alone decides.
        _ = try await store.prune(retention: retention, now: Self.now)
        #expect(try remaining(dir.file("h.sqlite")).runs == [4])
    }

    @Test("Retention.cooling: each action with a cooldown, a minute more than it (a cooled trigger's record is written a commit after its decision)")
    func coolingOfActions() throws {
        var a = Action(name: "a", exec: ["true"])
        a.cooldown = .seconds(600)
        #expect(Retention.cooling([a, Action(name: "b", exec: ["true"])]) == ["a": .seconds(660)])
    }
}
