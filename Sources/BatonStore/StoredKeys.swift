import BatonCore

/// Migration 2's rewrite: the keys that runs and trigger records stored in the old, ambiguous
/// form (`kp a=x b=y b=z`) become escaped keys (`kp a=x%20b%3Dy b=z`), read with each row's own
/// params (`SingleFlightKey.rewriting(legacy:)`). Rows whose values have nothing to escape keep
/// their key, so only rows whose params text holds a space, `=`, `%`, a backslash (a JSON escape)
/// or a character outside printable ASCII are read at all.
enum StoredKeys {
    static func rewrite(_ connection: Connection) throws {
        for table in ["runs", "triggers"] {
            var changed: [(id: Int64, key: String)] = []
            try connection.withStatement("""
                SELECT id, action, key, params FROM \(table)
                WHERE key <> action AND (params GLOB '*[% =\\]*' OR params GLOB '*[^ -~]*')
                """) { statement in
                while try statement.step() {
                    guard let id = statement.int64(0),
                          let key = SingleFlightKey.rewriting(legacy: statement.string(2) ?? "", action: statement.string(1) ?? "",
                                                              params: JSONText.params(statement.string(3)))
                    else { continue }
                    changed.append((id, key))
                }
            }
            try connection.withStatement("UPDATE \(table) SET key = ? WHERE id = ?") { statement in
                for row in changed { try statement.run([.text(row.key), .integer(row.id)]) }
            }
        }
    }
}
