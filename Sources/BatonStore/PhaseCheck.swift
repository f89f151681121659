import CSQLite

/// Migration 17's rewrite: `runs.phase`'s CHECK written as comparisons instead of an IN list,
/// which SQLite evaluated with a temporary b-tree built for each statement that writes a run's
/// phase. The two checks accept the same values, so every row already satisfies the new one and
/// the table's definition is changed in place: SQLite's documented way to change a CHECK
/// (`writable_schema`, then the schema's version moved on so that every connection reads the new
/// definition). A definition without the old text (changed by hand) is left alone, and so is
/// every definition where the library refuses the change (a defensive build): the old check
/// stays, equivalent and slower, and the migration says so (its note, for the log).
enum PhaseCheck {
    static let old = "CHECK (phase IN ('queued', 'loading', 'retrying', 'success', 'failure', 'cancelled'))"
    static let new = """
        CHECK (phase = 'queued' OR phase = 'loading' OR phase = 'retrying' OR phase = 'success' OR phase = 'failure' \
        OR phase = 'cancelled')
        """

    /// Rewrites the check to `replacement` (`new`; another only in tests); returns why the
    /// definition was left as it was, or nil when it was rewritten.
    static func rewrite(_ connection: Connection, to replacement: String = new) throws -> String? {
        let definition = "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'runs'"
        guard let sql = try connection.scalar(definition)?.string, sql.contains(old) else {
            return "runs' definition does not hold the phase check it rewrites (changed by hand?): left as it is"
        }
        let version = try connection.scalar("PRAGMA schema_version")?.int64 ?? 0
        try connection.execute("PRAGMA writable_schema = ON")
        defer { try? connection.execute("PRAGMA writable_schema = OFF") }
        do {
            try connection.withStatement("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'runs'") {
                try $0.run([.text(sql.replacing(old, with: replacement))])
            }
        } catch let error as DatabaseError where error.primaryCode == SQLITE_ERROR {
            // Refused (a defensive library): nothing was changed, the old check stays.
            return "SQLite refused to change runs' definition (\(error.message); a defensive library): "
                + "the phase check stays an IN list, equivalent, and slower to write a run's phase"
        }
        try connection.execute("PRAGMA schema_version = \(version + 1)")
        // The new definition is read back at once: were it not SQL, this fails and the
        // migration's transaction is rolled back, the old definition with it.
        _ = try connection.scalar("SELECT count(*) FROM runs WHERE 0")
        return nil
    }
}
