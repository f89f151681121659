import BatonCore
@testable import BatonStore
import CSQLite
import Foundation
import Synchronization
import Testing

/// Migration 17 (issue 39, item 3): the phase's CHECK as comparisons, `runs_by_action_outcome`
/// of ended runs only; the same rows, the same answers, the same refusals.
@Suite("Migration 17: cheaper writes of a run's row")
struct RunWritesMigrationTests {
    static let now = Timestamp(microseconds: 1_800_000_000_000_000)

    /// A history at version 16 with runs of two actions: ended ones (each phase) and one of each in flight.
    static func versionSixteen(at path: String) throws {
        let phases: [Phase] = [.success, .failure, .success, .cancelled, .success, .failure, .queued, .loading, .retrying]
        let rows = (phases + phases).enumerated().map { index, phase -> [DatabaseValue] in
            let id = Int64(index + 1), action = index < phases.count ? "a" : "b"
            let ended: DatabaseValue = phase.isTerminal ? .integer(now.rawValue + id * 1_000) : .null
            return [.integer(id), .text(action), .text(action), .text(phase.rawValue), .integer(now.rawValue),
                    .integer(now.rawValue + id), ended, .integer(id * 10), .integer(id * 100)]
        }
        try OldHistory.make(at: path, version: 16) { connection in
            try OldHistory.insert("""
                INSERT INTO runs (id, action, key, phase, policy, params, queued_at, started_at, ended_at, cpu_user, memory_peak)
                VALUES (?, ?, ?, ?, 'reject', '{}', ?, ?, ?, ?, ?)
                """, rows: rows, on: connection)
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

    /// The queries on `runs` that `runs_by_action_outcome` served at version 16 and serves still
    /// (the text of `Stats`, `History.recentDurations` and the pruner's selection, their arguments
    /// aside), each with the start of the plan line that reads `runs`.
    static let servedQueries: [(String, String)] = [
        ("SELECT phase, count(*) FROM runs INDEXED BY runs_by_action_outcome WHERE action = ? AND phase IN ('success', 'failure', 'cancelled') AND ended_at >= ? GROUP BY phase",
         "SEARCH runs USING COVERING INDEX runs_by_action_outcome (action=? AND phase=? AND ended_at>?)"),
        ("SELECT ended_at - started_at FROM runs INDEXED BY runs_by_action_outcome WHERE action = ? AND phase = 'success' AND ended_at >= ? AND started_at IS NOT NULL",
         "SEARCH runs USING INDEX runs_by_action_outcome (action=? AND phase=? AND ended_at>?)"),
        ("SELECT max(ended_at) FROM runs WHERE action = ? AND phase = ? AND ended_at >= ?",
         "SEARCH runs USING COVERING INDEX runs_by_action_outcome (action=? AND phase=? AND ended_at>?)"),
        ("""
         SELECT count(*) FROM runs WHERE action = ? AND phase = 'failure' AND ended_at >= ? AND ended_at > coalesce((SELECT max(ended_at) \
         FROM runs WHERE action = ? AND phase = 'success' AND ended_at IS NOT NULL), -1)
         """, "SEARCH runs USING COVERING INDEX runs_by_action_outcome (action=? AND phase=?"),
        ("SELECT cpu_user + cpu_system, memory_peak FROM runs INDEXED BY runs_by_action_outcome WHERE action = ? AND phase IN ('success', 'failure', 'cancelled') AND ended_at >= ? AND (cpu_user IS NOT NULL OR memory_peak IS NOT NULL)",
         "SEARCH runs USING INDEX runs_by_action_outcome (action=? AND phase=? AND ended_at>?)"),
        ("SELECT ended_at - started_at FROM runs WHERE action = ? AND phase = 'success' AND started_at IS NOT NULL AND ended_at IS NOT NULL ORDER BY ended_at DESC LIMIT ?",
         "SEARCH runs USING INDEX runs_by_action_outcome (action=? AND phase=?"),
        ("SELECT id FROM runs WHERE action = ? AND phase IN ('success', 'failure', 'cancelled') AND ended_at IS NOT NULL AND ((phase <> 'failure' AND ended_at < ?) OR (phase = 'failure' AND ended_at < ?) OR id < ?)",
         "SEARCH runs USING COVERING INDEX runs_by_action_outcome (action=? AND phase=?"),
    ]

    /// The plan lines of `sql` (`EXPLAIN QUERY PLAN`).
    static func plan(_ sql: String, on connection: Connection) throws -> [String] {
        try connection.withStatement("EXPLAIN QUERY PLAN " + sql) { statement in
            var lines: [String] = []
            while try statement.step() { lines.append(statement.string(3) ?? "") }
            return lines
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
        let plansBefore = try Self.servedQueries.map { try Self.plan($0.0, on: before.connection) }
        // The full index holds in-flight runs too: a query without an ended_at term may be made to read it.
        let everyRun = "SELECT count(*) FROM runs INDEXED BY runs_by_action_outcome WHERE action = 'a'"
        #expect(try before.connection.scalar(everyRun)?.int64 == 9)

        let store = try Store(path: path)
        store.close()
        let connection = try Connection(path: path)
        #expect(try Migrator.version(of: connection) == Migrator.latestVersion)
        let table = try Self.definition(of: "runs", on: connection)
        #expect(table.contains(PhaseCheck.new) && !table.contains(PhaseCheck.old), "\(table)")
        #expect(try Self.definition(of: "runs_by_action_outcome", on: connection).hasSuffix("WHERE ended_at IS NOT NULL"))
        #expect(try connection.scalar("PRAGMA integrity_check")?.string == "ok")
        // The index holds the ended runs only: 6 of each action's 9, and a query that may want the
        // others (no ended_at term) cannot be made to read it.
        #expect(try connection.scalar("SELECT count(*) FROM runs INDEXED BY runs_by_action_outcome WHERE ended_at IS NOT NULL")?.int64 == 12)
        let refused = #expect(throws: DatabaseError.self) { try connection.scalar(everyRun) }
        #expect(refused?.message.contains("no query solution") == true, "\(String(describing: refused))")
        #expect(try connection.scalar("SELECT count(*) FROM runs WHERE action = 'a'")?.int64 == 9)

        let after = try History(connection: Connection(path: path, readOnly: true))
        // Every query the index served reads it still, with the same seek.
        for ((sql, expected), old) in zip(Self.servedQueries, plansBefore) {
            let new = try Self.plan(sql, on: after.connection)
            #expect(new == old, "\(sql)")
            #expect(new.contains { $0.hasPrefix(expected) }, "\(sql): \(new)")
        }
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

    @Test("writing a run's phase builds no temporary table (the IN list's), counted in opcodes, on a new connection and the migrating one",
          arguments: [false, true])
    func noTemporaryTable(_ migrating: Bool) throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let connection: Connection
        if migrating {
            // The writer's connection is the one that migrated: it must not keep the old definition.
            try Self.versionSixteen(at: path)
            connection = try Connection(path: path)
            #expect(try Migrator.migrate(connection) == Array(17...Migrator.latestVersion))
        } else {
            try Store(path: path).close()
            connection = try Connection(path: path)
        }
        #expect(try Self.definition(of: "runs", on: connection).contains(PhaseCheck.new))
        for sql in ["UPDATE runs SET phase = ?, ended_at = ? WHERE id = ? AND phase = ?",
                    "INSERT INTO runs (id, action, key, phase, policy, queued_at) VALUES (?, ?, ?, ?, ?, ?)"] {
            let ops = try Self.opcodes(sql, on: connection)
            #expect(!ops.contains("OpenEphemeral"), "\(sql): \(ops)")
        }
        // (The old definition built one with SQLite 3.40, for each statement that wrote the phase;
        // not asserted: a later SQLite may code an IN list of constants otherwise.)
    }

    /// Turns on SQLITE_DBCONFIG_DEFENSIVE, as a defensive library build does for every connection.
    /// (`sqlite3_db_config` is variadic, which Swift cannot call: it is called through a pointer
    /// of its one form here, integer arguments passed alike in the Linux calling conventions.)
    static func makeDefensive(_ connection: Connection) throws {
        let library = try #require(dlopen(SQLite.library, RTLD_NOW))
        defer { dlclose(library) }
        typealias DBConfig = @convention(c) (OpaquePointer, Int32, Int32, UnsafeMutablePointer<Int32>?) -> Int32
        let config = unsafeBitCast(try #require(dlsym(library, "sqlite3_db_config")), to: DBConfig.self)
        var on: Int32 = 0
        #expect(config(connection.handle, SQLITE_DBCONFIG_DEFENSIVE, 1, &on) == SQLITE_OK && on == 1)
    }

    /// Migrates the history at `path` from version 16 with `connection`; returns the notes said.
    static func migrateNoting(_ connection: Connection, migrations: [Migrator.Migration] = Migrator.migrations) throws -> [Int: String] {
        var notes: [Int: String] = [:]
        try Migrator.migrate(connection, migrations: migrations, noted: { notes[$0.version] = $1 })
        return notes
    }

    @Test("a defensive library refuses the rewrite: version 17 is recorded, the old check stays, and the migration says so")
    func defensiveLibrary() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        try Self.versionSixteen(at: path)
        let connection = try Connection(path: path)
        try Self.makeDefensive(connection)
        let notes = try Self.migrateNoting(connection)
        #expect(try Migrator.version(of: connection) == Migrator.latestVersion)
        let table = try Self.definition(of: "runs", on: connection)
        #expect(table.contains(PhaseCheck.old) && !table.contains(PhaseCheck.new), "\(table)")
        #expect(try Self.definition(of: "runs_by_action_outcome", on: connection).hasSuffix("WHERE ended_at IS NOT NULL"))
        #expect(try connection.scalar("PRAGMA integrity_check")?.string == "ok")
        #expect(notes.keys.sorted() == [17])
        #expect(notes[17]?.contains("defensive") == true && notes[17]?.contains("may not be modified") == true, "\(notes)")
        // The old check still refuses a phase that is not one of the six.
        let insert = "INSERT INTO runs (id, action, key, phase, policy, queued_at) VALUES (100, 'a', 'a', 'finished', 'reject', 1)"
        #expect(throws: DatabaseError.self) { try connection.execute(insert) }
    }

    @Test("a definition without the old check (changed by hand) is left as it is, and the store's option is told why")
    func definitionChangedByHand() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        try Self.versionSixteen(at: path)
        let handMade = "CHECK (phase IN ('queued','loading','retrying','success','failure','cancelled'))"
        do {
            let connection = try Connection(path: path)
            let version = try #require(try connection.scalar("PRAGMA schema_version")?.int64)
            try connection.execute("PRAGMA writable_schema = ON")
            try connection.withStatement("UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE name = 'runs'") {
                try $0.run([.text(PhaseCheck.old), .text(handMade)])
            }
            try connection.execute("PRAGMA schema_version = \(version + 1)")
            try connection.execute("PRAGMA writable_schema = OFF")
        }
        let notes = Mutex<[Int: String]>([:])
        var options = Store.Options()
        options.migrationNote = { version, note in notes.withLock { $0[version] = note } }
        try Store(path: path, options: options).close()
        let connection = try Connection(path: path)
        #expect(try Migrator.version(of: connection) == Migrator.latestVersion)
        #expect(try Self.definition(of: "runs", on: connection).contains(handMade))
        #expect(try connection.scalar("PRAGMA integrity_check")?.string == "ok")
        let said = notes.withLock { $0 }
        #expect(said.keys.sorted() == [17] && said[17]?.contains("changed by hand") == true, "\(said)")
    }

    @Test("a replacement that does not parse rolls the migration back: version 16 and the old check and index remain")
    func badReplacementRollsBack() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        try Self.versionSixteen(at: path)
        let fullIndex = try Self.definition(of: "runs_by_action_outcome", on: Connection(path: path))
        let migrations = Migrator.migrations.map { migration in
            var migration = migration
            if migration.version == 17 { migration.rewrite = { try PhaseCheck.rewrite($0, to: "CHECK (phase = ") } }
            return migration
        }
        let connection = try Connection(path: path)
        #expect(throws: DatabaseError.self) { try Self.migrateNoting(connection, migrations: migrations) }
        for reader in [connection, try Connection(path: path)] {
            #expect(try Migrator.version(of: reader) == 16)
            #expect(try Self.definition(of: "runs", on: reader).contains(PhaseCheck.old))
            #expect(try Self.definition(of: "runs_by_action_outcome", on: reader) == fullIndex)
            #expect(try reader.scalar("PRAGMA integrity_check")?.string == "ok")
            #expect(try reader.scalar("SELECT count(*) FROM runs")?.int64 == 18)
        }
        // The right rewrite then migrates the same file.
        #expect(try Self.migrateNoting(connection).isEmpty)
        #expect(try Self.definition(of: "runs", on: connection).contains(PhaseCheck.new))
    }
}
