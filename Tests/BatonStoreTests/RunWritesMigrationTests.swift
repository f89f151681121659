import BatonCore
@testable import BatonStore
import CSQLite
import Foundation
import Testing

/// Migration 17 (issue 39, item 3): the phase's CHECK as comparisons, `runs_by_action_outcome`
/// of ended runs only; the same rows, the same answers, the same refusals.
@Suite("Migration 17: cheaper writes of a run's row")
struct RunWritesMigrationTests {
    static let now = Timestamp(microseconds: 1_800_000_000_000_000)

    /// A history at version 16 with runs of two actions: ended ones (each phase) and one of each in flight.
    static func versionSixteen(at path: String) throws {
        let connection = try Connection(path: path)
        #expect(try Migrator.migrate(connection, migrations: Migrator.migrations.filter { $0.version <= 16 }).last == 16)
        let phases: [Phase] = [.success, .failure, .success, .cancelled, .success, .failure, .queued, .loading, .retrying]
        for (index, phase) in (phases + phases).enumerated() {
            let id = Int64(index + 1), action = index < phases.count ? "a" : "b"
            let ended: DatabaseValue = phase.isTerminal ? .integer(now.rawValue + id * 1_000) : .null
            try connection.withStatement("""
                INSERT INTO runs (id, action, key, phase, policy, params, queued_at, started_at, ended_at, cpu_user, memory_peak)
                VALUES (?, ?, ?, ?, 'reject', '{}', ?, ?, ?, ?, ?)
                """) {
                try $0.run([.integer(id), .text(action), .text(action), .text(phase.rawValue), .integer(now.rawValue),
                            .integer(now.rawValue + id), ended, .integer(id * 10), .integer(id * 100)])
            }
        }
    }

    static func definition(of name: String, on connection: Connection) throws -> String {
        try connection.scalar("SELECT sql FROM sqlite_master WHERE name = ?", [.text(name)])?.string ?? ""
    }

    /// The opcodes of a statement as SQLite compiles it on `connection`.
    static func opcodes(_ sql: String, on connection: Connection) throws -> [String] {
        try connection.withStatement("EXPLAIN " + sql) { statement in
            var list: [String] = []
            while try statement.step() { list.append(statement.string(1) ?? "") }
            return list
        }
    }

    @Test("a version-16 history keeps its rows, its stats and its plans; the phase check becomes comparisons")
    func migratesInPlace() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        try Self.versionSixteen(at: path)
        let before = try History(connection: Connection(path: path, readOnly: true))
        let statsBefore = try before.stats(since: Self.now), durationsBefore = try before.recentDurations(of: ["a", "b"])
        let rowsBefore = try before.runs(HistoryFilter(limit: 100))

        let store = try Store(path: path)
        store.close()
        let connection = try Connection(path: path)
        #expect(try Migrator.version(of: connection) == Migrator.latestVersion)
        let table = try Self.definition(of: "runs", on: connection)
        #expect(table.contains(PhaseCheck.new) && !table.contains(PhaseCheck.old), "\(table)")
        #expect(try Self.definition(of: "runs_by_action_outcome", on: connection).hasSuffix("WHERE ended_at IS NOT NULL"))
        #expect(try connection.scalar("PRAGMA integrity_check")?.string == "ok")
        // The index holds the ended runs only: 6 of each action's 9.
        #expect(try connection.scalar("SELECT count(*) FROM runs INDEXED BY runs_by_action_outcome WHERE ended_at IS NOT NULL")?.int64 == 12)

        let after = try History(connection: Connection(path: path, readOnly: true))
        #expect(try after.stats(since: Self.now) == statsBefore)
        #expect(try after.recentDurations(of: ["a", "b"]) == durationsBefore)
        #expect(try after.runs(HistoryFilter(limit: 100)) == rowsBefore)
    }

    @Test("a run's phase is still checked, on a migrated history and on a new one", arguments: [true, false])
    func phaseStillChecked(_ migrated: Bool) throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        if migrated { try Self.versionSixteen(at: path) }
        try Store(path: path).close()
        let connection = try Connection(path: path)
        #expect(try Self.definition(of: "runs", on: connection).contains(PhaseCheck.new))
        let insert = "INSERT INTO runs (id, action, key, phase, policy, queued_at) VALUES (100, 'a', 'a', ?, 'reject', 1)"
        let refusal = #expect(throws: DatabaseError.self) { try connection.withStatement(insert) { try $0.run([.text("finished")]) } }
        #expect(refusal?.primaryCode == SQLITE_CONSTRAINT && refusal?.message.contains("CHECK constraint failed") == true)
        try connection.withStatement(insert) { try $0.run([.text("queued")]) }
        #expect(throws: DatabaseError.self) { try connection.execute("UPDATE runs SET phase = 'Success' WHERE id = 100") }
        for phase in Phase.allCases { try connection.execute("UPDATE runs SET phase = '\(phase.rawValue)' WHERE id = 100") }
    }

    @Test("writing a run's phase builds no temporary table (the IN list's), counted in opcodes")
    func noTemporaryTable() throws {
        let dir = TemporaryDirectory()
        try Store(path: dir.file("h.sqlite")).close()
        let connection = try Connection(path: dir.file("h.sqlite"))
        for sql in ["UPDATE runs SET phase = ?, ended_at = ? WHERE id = ? AND phase = ?",
                    "INSERT INTO runs (id, action, key, phase, policy, queued_at) VALUES (?, ?, ?, ?, ?, ?)"] {
            let ops = try Self.opcodes(sql, on: connection)
            #expect(!ops.contains("OpenEphemeral"), "\(sql): \(ops)")
        }
        // (The old definition built one with SQLite 3.40, for each statement that wrote the phase;
        // not asserted: a later SQLite may code an IN list of constants otherwise.)
    }
}
