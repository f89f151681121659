import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// Migration 2 on a history file written with schema version 1 and its keys (issue 21, item 3).
@Suite("Migration 2: stored keys become escaped")
struct StoredKeyMigrationTests {
    /// Runs as version 1 stored them: action, old key, params.
    static let runs: [(action: String, key: String, params: [String: String], new: String)] = [
        ("kp", "kp a=x b=y b=z", ["a": "x b=y", "b": "z"], "kp a=x%20b%3Dy b=z"),
        ("kp", "kp a=x b=y b=z", ["a": "x", "b": "y b=z"], "kp a=x b=y%20b%3Dz"),
        ("kp", "kp a=plain b=1", ["a": "plain", "b": "1"], "kp a=plain b=1"),
        ("deploy", "deploy", ["note": "a b = c"], "deploy"),
        ("kp", "kp a=100% b=cafe\u{301}", ["a": "100%", "b": "cafe\u{301}"], "kp a=100%25 b=cafe%CC%81"),
        ("kp", "kp a=\t b=", ["a": "\t", "b": ""], "kp a=%09 b="),
        ("kp", "kp b=\"q\" 'r' a=é", ["a": "é", "b": "\"q\" 'r'", "c": "not a key param"], "kp b=\"q\"%20'r' a=é"),
        // Not a key of these params (written by hand, or by something else): left as it is.
        ("kp", "kp a=x", ["a": "y z"], "kp a=x"),
    ]

    /// A history file at schema version 1 with `runs` and, for run 1, a trigger of run 2's params
    /// that joined it under the shared old key, and a denied trigger that has no key.
    static func versionOne(at path: String) throws {
        try OldHistory.make(at: path, version: 1) { connection in
            try OldHistory.insert("INSERT INTO runs (id, action, key, phase, policy, params, queued_at) VALUES (?, ?, ?, 'success', 'join', ?, 1)",
                                  rows: runs.enumerated().map { index, run -> [DatabaseValue] in
                                      [.integer(Int64(index + 1)), .text(run.action), .text(run.key), .text(JSONText.object(run.params))]
                                  }, on: connection)
            let triggers = [("kp a=x b=y b=z", "joined", runs[1].params), ("", "denied trigger", ["a": "x y"])]
            try OldHistory.insert("INSERT INTO triggers (run_id, action, key, decision, policy, at, params) VALUES (1, 'kp', ?, ?, 'join', 2, ?)",
                                  rows: triggers.map { [.text($0.0), .text($0.1), .text(JSONText.object($0.2))] }, on: connection)
        }
    }

    @Test("opening a version-1 history rewrites the keys that change and leaves every other key as it was")
    func rewritesOnOpen() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("h.sqlite")
        try Self.versionOne(at: path)
        try Store(path: path).close()
        let keys = try OldHistory.column("SELECT key FROM runs ORDER BY id", at: path)
        #expect(keys.map { Array($0.utf8) } == Self.runs.map { Array($0.new.utf8) }, "\(keys)")
        #expect(try OldHistory.column("SELECT key FROM triggers ORDER BY id", at: path) == ["kp a=x b=y%20b%3Dz", ""])
        #expect(try OldHistory.column("SELECT version || ' ' || name FROM schema_migrations ORDER BY version", at: path)
                .prefix(2) == ["1 history", "2 escaped_keys"])
    }

    @Test("every rewritten key is the key the run's action makes of its params today")
    func agreesWithTodaysKeys() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("h.sqlite")
        try Self.versionOne(at: path)
        let connection = try Connection(path: path)
        #expect(try Migrator.migrate(connection) == Array(2...Migrator.latestVersion))
        let kp = Action(name: "kp", params: ["a": ParamSpec(), "b": ParamSpec()], keyParams: ["a", "b"])
        let stored = try connection.withStatement("SELECT key, params FROM runs WHERE id IN (1, 2, 3, 5, 6)") { statement in
            var rows: [(String, [String: String])] = []
            while try statement.step() { rows.append((statement.string(0) ?? "", JSONText.params(statement.string(1)))) }
            return rows
        }
        #expect(stored.count == 5)
        for (key, params) in stored { #expect(Array(key.utf8) == Array(kp.key(for: params).utf8)) }
    }
}
