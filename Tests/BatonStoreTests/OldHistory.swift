@testable import BatonStore
import Foundation
import Testing

/// A history file as an older batond left it, for the store's migration tests: the migrations up
/// to `version` run on a fresh file, then the test's rows go in as that version stored them.
enum OldHistory {
    /// Makes `path` a history at schema `version`, then lets `fill` write its rows.
    static func make(at path: String, version: Int, sourceLocation: SourceLocation = #_sourceLocation,
                     _ fill: (Connection) throws -> Void = { _ in }) throws {
        let connection = try Connection(path: path)
        let ran = try Migrator.migrate(connection, migrations: Migrator.migrations.filter { $0.version <= version })
        #expect(ran == Array(1...version), sourceLocation: sourceLocation)
        try fill(connection)
    }

    /// Run 1 of action `a`, ended (success, exit 0), as every version has stored it.
    static let endedRun = """
        INSERT INTO runs (id, action, key, phase, policy, queued_at, started_at, ended_at, attempts, exit_code, reason)
        VALUES (1, 'a', 'a', 'success', 'reject', 1, 2, 3, 1, 0, 'exit')
        """

    /// Runs `sql` once a row of `rows`, its values bound in order.
    static func insert(_ sql: String, rows: [[DatabaseValue]], on connection: Connection) throws {
        for row in rows { try connection.withStatement(sql) { try $0.run(row) } }
    }

    /// The first column of each row `sql` answers on the history at `path` ("NULL" for null).
    static func column(_ sql: String, at path: String) throws -> [String] {
        let connection = try Connection(path: path, readOnly: true)
        return try connection.withStatement(sql) { statement in
            var values: [String] = []
            while try statement.step() { values.append(statement.string(0) ?? "NULL") }
            return values
        }
    }
}
