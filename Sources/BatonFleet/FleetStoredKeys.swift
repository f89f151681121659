import BatonCore

/// Fleet migration 2's rewrite: keys stored in the old, ambiguous form (`kp a=x b=y b=z`) become
/// escaped keys (`kp a=x%20b%3Dy b=z`) in `runs` and `triggers`, read with each row's own params
/// (`SingleFlightKey.rewriting(legacy:)`), and the slot rows of `keys` that hold, follow or drain
/// a rekeyed run move to its new key. Only rows whose params text holds a space, `=`, `%`, a
/// backslash or a character outside printable ASCII are read; most keys do not change.
enum FleetStoredKeys {
    static func rewrite(_ db: PGConnection) throws {
        let runs = try changed("runs", on: db)
        // Through a key of its own first (no key holds a control character): the index of one
        // loading run per key checks every row as it is written, and a run's new key may be the
        // old key of another loading run not rewritten yet (`a=x y` becomes `kp a=x%20y`, until
        // now the key of a run of the literal value `x%20y`).
        try update("runs", runs.map { ($0.id, "\u{1}\($0.id)") }, on: db)
        try update("runs", runs, on: db)
        try update("triggers", try changed("triggers", on: db), on: db)
        try moveSlots(of: runs.map(\.id), on: db)
    }

    /// The rows of `table` whose key changes, with their new key.
    private static func changed(_ table: String, on db: PGConnection) throws -> [(id: Int64, key: String)] {
        try db.query("""
            SELECT id, action, key, params FROM \(table) WHERE key <> action AND params ~ '[% =\\\\]|[^ -~]' ORDER BY id
            """).rows.compactMap { row in
            guard let id = row[0].flatMap({ Int64($0) }),
                  let key = SingleFlightKey.rewriting(legacy: row[2] ?? "", action: row[1] ?? "", params: JSONText.params(row[3]))
            else { return nil }
            return (id, key)
        }
    }

    private static func update(_ table: String, _ rows: [(id: Int64, key: String)], on db: PGConnection) throws {
        for start in stride(from: 0, to: rows.count, by: 500) {
            _ = try db.pipeline(rows[start..<min(start + 500, rows.count)].map {
                ("UPDATE \(table) SET key = $2 WHERE id = $1", [String($0.id), $0.key])
            })
        }
    }

    /// Every slot that holds, follows or drains one of `runs` is replaced by the slots of its
    /// runs' keys as they are now (`split`).
    private static func moveSlots(of runs: [Int64], on db: PGConnection) throws {
        guard !runs.isEmpty else { return }
        let ids = "{" + runs.map(String.init).joined(separator: ",") + "}"
        let rows = try db.query("""
            SELECT key, holder, follow_up, draining FROM keys
            WHERE holder = ANY ($1::bigint[]) OR follow_up = ANY ($1::bigint[]) OR draining && $1::bigint[]
            """, [ids]).rows
        var slots: [String: KeySlot] = [:]
        for row in rows {
            let key = row[0] ?? ""
            let slot = KeySlot(row: Array(row.dropFirst()))
            let members = [slot.holder, slot.followUp].compactMap { $0 } + slot.draining
            let keys = try db.query("SELECT id, key FROM runs WHERE id = ANY ($1::bigint[])",
                                    ["{" + members.map(String.init).joined(separator: ",") + "}"]).rows
            let keyOf = Dictionary(keys.compactMap { row in row[0].flatMap { Int64($0) }.map { ($0, row[1] ?? key) } }) { first, _ in first }
            try db.query("DELETE FROM keys WHERE key = $1", [key])
            // Runs of one new key had one old key, so two old slots never make the same new one.
            try slots.merge(split(slot, key: key, keyOf: keyOf)) { _, _ in
                throw PGError(message: "two key slots would become one while rewriting the slot of \(key.debugDescription)")
            }
        }
        for (key, slot) in slots {
            // An empty slot already there is taken over; a busy one would be a run of the same
            // params under both keys, which the old keys could not make: the insert refuses it.
            try db.query("DELETE FROM keys WHERE key = $1 AND holder IS NULL AND follow_up IS NULL AND cardinality(draining) = 0", [key])
            try db.query("INSERT INTO keys (key, holder, follow_up, draining) VALUES ($1, $2, $3, $4::bigint[])",
                         [key, FleetRows.text(slot.holder), FleetRows.text(slot.followUp), slot.drainingText])
        }
    }

    /// A slot of key `key` as the slots of its runs' keys (`keyOf`; a run not in it stays under
    /// `key`): each run keeps its role where its key is shared, and a follow-up whose holder
    /// now has another key holds its own key (it no longer waits for a run of other params).
    static func split(_ slot: KeySlot, key: String, keyOf: [Int64: String]) -> [String: KeySlot] {
        let place = { (run: Int64) in keyOf[run] ?? key }
        var slots: [String: KeySlot] = [:]
        if let holder = slot.holder { slots[place(holder), default: KeySlot()].holder = holder }
        if let followUp = slot.followUp {
            let at = place(followUp)
            if slots[at]?.holder == nil { slots[at, default: KeySlot()].holder = followUp } else { slots[at]?.line = [followUp] }
        }
        for run in slot.draining { slots[place(run), default: KeySlot()].draining.insert(run) }
        return slots
    }
}
