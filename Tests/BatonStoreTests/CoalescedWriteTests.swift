import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// A group commit writes each run it creates once (`RunRows`): the rows are the same as writing
/// the items one by one, on real SQLite files, with fewer row writes; an illegal transition
/// still fails only its own item.
@Suite("Coalesced run rows", .offPool)
struct CoalescedWriteTests {
    typealias Writer = StoreWriterTests
    static let t0 = Timestamp.now.rawValue

    static func at(_ offset: Int64) -> Timestamp { Timestamp(rawValue: t0 + offset) }

    static func created(_ id: Int64, peer: Bool = false) -> JournalEntry {
        var run = RunSnapshot(id: id, action: "a", key: "a\(id)", phase: .queued, policy: .queue, params: peer ? ["v": "1"] : [:],
                              trigger: peer ? Peer(uid: 1000, gid: 100, pid: 77) : nil, queuedAt: at(id))
        if peer {
            run.via = "webhook gh"
            run.hook = HookCause(run: 1, action: "a", event: .success)
        }
        return .created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: at(id)))
    }

    static func move(_ id: Int64, _ seq: Int, _ from: Phase, _ to: Phase, _ detail: TransitionDetail = .init()) -> JournalEntry {
        .transition(Transition(runID: id, seq: seq, from: from, to: to, at: at(id * 100 + Int64(seq)), detail: detail))
    }

    static func ended(exit: Int32, error: String? = nil, cpu: Int64?, peak: Int64?) -> TransitionDetail {
        var detail = TransitionDetail(reason: "exit", exitCode: exit, error: error)
        detail.cpuUser = cpu
        detail.cpuSystem = cpu.map { $0 / 2 }
        detail.memoryPeak = peak
        return detail
    }

    static func chunks(_ id: Int64, _ text: String, total: Int64) -> JournalEntry {
        .outputChunks(OutputWrite(runID: id, chunks: [OutputChunk(start: total - Int64(text.utf8.count), stream: .stdout, at: at(id),
                                                                  bytes: Array(text.utf8))],
                                  removeBefore: nil, head: 0, total: total, dropped: 0))
    }

    /// Runs 5, 7 and 8 are in the table before the batch; the batch creates 1, 2, 3, 4 and 6 and
    /// moves them (and 5 and 7; 8 gets a process group) through their phases, item by item as
    /// the conductor hands them over.
    static let batch: [[JournalEntry]] = [
        [created(1)], [created(2)], [created(3, peer: true), .delivery(Delivery(hook: "gh", id: "d1"), runID: 3, at: at(3))],
        [move(1, 2, .queued, .loading, TransitionDetail(attempt: 1))], [.processGroup(runID: 1, pgid: 4242, identity: "boot:1")],
        [move(2, 2, .queued, .loading, TransitionDetail(attempt: 1))],
        [.trigger(TriggerRecord(runID: 3, action: "a", key: "a3", decision: .joined, policy: .join, peer: nil, at: at(9), params: [:]))],
        [.output(runID: 1, tail: Array("hi".utf8), truncated: false), move(1, 3, .loading, .success, ended(exit: 0, cpu: 10, peak: 1000))],
        [move(2, 3, .loading, .retrying, ended(exit: 1, error: "exited 1", cpu: 20, peak: 2000))],
        [created(4)], [move(4, 2, .queued, .cancelled, TransitionDetail(reason: "cancelled", by: 1000))],
        [move(2, 4, .retrying, .loading, TransitionDetail(attempt: 2))], [.processGroup(runID: 2, pgid: 4343, identity: "boot:2")],
        [move(5, 2, .queued, .loading, TransitionDetail(attempt: 1))], [chunks(5, "five\n", total: 5)],
        [.output(runID: 2, tail: [], truncated: true), move(2, 5, .loading, .failure, ended(exit: 2, error: "exited 2", cpu: 30, peak: 1500))],
        [created(6)], [move(6, 2, .queued, .loading, TransitionDetail(attempt: 1))], [chunks(6, "six\n", total: 4)],
        [.output(runID: 5, tail: Array("five\n".utf8), truncated: false), move(5, 3, .loading, .success, ended(exit: 0, cpu: nil, peak: nil))],
        [.processGroup(runID: 8, pgid: 88, identity: "boot:8")],
        [move(7, 2, .queued, .loading, TransitionDetail(attempt: 1))], [.processGroup(runID: 7, pgid: 77, identity: "boot:7")],
        [move(7, 3, .loading, .retrying, ended(exit: 3, error: "exited 3", cpu: 40, peak: 700))],
        [move(7, 4, .retrying, .loading, TransitionDetail(attempt: 2))], [.processGroup(runID: 7, pgid: 78, identity: "boot:7b")],
        [move(7, 5, .loading, .cancelled, ended(exit: 0, cpu: 5, peak: 900))],
    ]

    /// Every row of every table a run's entries write, in key order, as text.
    static func rows(_ path: String) throws -> [String] {
        let connection = try Connection(path: path, readOnly: true)
        let tables = ["runs", "transitions", "triggers", "outputs", "output_chunks", "output_totals", "webhook_deliveries"]
        return try tables.flatMap { table in
            try connection.withStatement("SELECT * FROM \(table) ORDER BY 1, 2") { statement in
                var rows: [String] = []
                while try statement.step() {
                    rows.append(table + ": " + (0..<statement.columnCount).map { "\(statement.value($0))" }.joined(separator: ", "))
                }
                return rows
            }
        }
    }

    /// Counts the writer's INSERTs and UPDATEs of `runs` (temporary triggers on its connection).
    static func countRowWrites(_ db: Connection) throws {
        try db.execute("""
            CREATE TEMP TABLE row_writes (kind TEXT PRIMARY KEY, n INTEGER NOT NULL);
            INSERT INTO row_writes VALUES ('insert', 0), ('update', 0);
            CREATE TEMP TRIGGER count_inserts AFTER INSERT ON runs BEGIN UPDATE row_writes SET n = n + 1 WHERE kind = 'insert'; END;
            CREATE TEMP TRIGGER count_updates AFTER UPDATE ON runs BEGIN UPDATE row_writes SET n = n + 1 WHERE kind = 'update'; END;
            """)
    }

    static func rowWrites(_ store: Store) async throws -> [String: Int64] {
        try await store.perform { db in
            try db.withStatement("SELECT kind, n FROM row_writes") { statement in
                var counts: [String: Int64] = [:]
                while try statement.step() { counts[statement.string(0)!] = statement.int64(1) }
                return counts
            }
        }
    }

    /// Holds the writer, hands it `items`, lets it go: one group. Returns each item's answer.
    static func group(_ store: Store, _ items: [[JournalEntry]], before: (@Sendable (Connection) throws -> Void)? = nil)
        throws -> [Result<Void, BatonError>?] {
        let gate = Writer.WriterGate()
        try store.writer.submit(Store.Item(entries: [], completion: { _ in }, refusedWhileFailing: false, work: { db in
            try before?(db)
            gate.entered.signal()
            gate.gate.wait()
        }))
        #expect(gate.entered.wait(timeout: .usualWait) == .success)
        let transactions = store.commitStatistics.transactions
        let answers = items.map { Writer.Answer(store, $0) }
        gate.open()
        let values = answers.map(\.value)
        #expect(store.commitStatistics.transactions == transactions + 2, "the gate's group and then one group for all")
        return values
    }

    @Test("one group with creations, starts, ends, output and trigger records writes the rows that item-by-item commits write")
    func sameRows() async throws {
        let dir = TemporaryDirectory()
        let single = try Store(path: dir.file("single.sqlite")), grouped = try Store(path: dir.file("grouped.sqlite"))
        for store in [single, grouped] { #expect(await store.commit([Self.created(5), Self.created(7), Self.created(8)]).isSuccess) }
        for item in Self.batch { #expect(await single.commit(item).isSuccess) }
        let answers = try Self.group(grouped, Self.batch, before: Self.countRowWrites)
        #expect(answers.allSatisfy { $0?.isSuccess == true })
        // Runs 1, 2, 3, 4 and 6 are each one INSERT; runs 5, 7 and 8, in the table before, are UPDATEd once each.
        let writes = try await Self.rowWrites(grouped)
        #expect(writes == ["insert": 5, "update": 3], "row writes of `runs` in the group: \(writes)")
        single.close()
        grouped.close()
        let expected = try Self.rows(dir.file("single.sqlite"))
        #expect(expected.count == 39, "8 runs, 22 transitions, a trigger, 3 tails, 2 chunks and their totals, a delivery")
        #expect(try Self.rows(dir.file("grouped.sqlite")) == expected)
    }

    @Test("an illegal transition in a group fails only its item, of a run created in it or in the table; a second group prepares nothing")
    func illegalAlone() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        let items: [[JournalEntry]] = [
            [Self.created(1)], [Self.move(1, 2, .queued, .loading)],
            [Self.move(1, 3, .retrying, .loading)],  // the run is loading, not retrying
            [Self.move(1, 3, .loading, .success, Self.ended(exit: 0, cpu: 1, peak: 1))], [Self.created(2)],
            [Self.move(2, 2, .queued, .success)],  // not a legal phase change at all
        ]
        let answers = try Self.group(store, items)
        #expect(answers.map { $0?.isSuccess } == [true, true, false, true, true, false])
        let prepared = try await store.perform { $0.cachedStatements }
        // Run 1 is in the table now: its illegal change fails alone too.
        let again = try Self.group(store, [[Self.created(3)], [Self.move(3, 2, .queued, .loading)], [Self.created(4)],
                                           [Self.move(1, 4, .success, .loading)], [Self.move(2, 2, .queued, .loading)],
                                           [Self.move(3, 3, .loading, .success, Self.ended(exit: 0, cpu: 1, peak: 1))]])
        #expect(again.map { $0?.isSuccess } == [true, true, true, false, true, true])
        #expect(try await store.perform { $0.cachedStatements } == prepared)
        store.close()
        let connection = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        #expect(try connection.scalar("SELECT group_concat(id || ':' || phase, ',') FROM (SELECT * FROM runs ORDER BY id)")?.string
            == "1:success,2:loading,3:success,4:queued")
        #expect(try connection.scalar("SELECT group_concat(to_phase, ',') FROM (SELECT * FROM transitions WHERE run_id = 1 ORDER BY seq)")?.string
            == "queued,loading,success")
    }
}
