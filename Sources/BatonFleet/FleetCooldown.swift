import BatonCore

/// Cooldowns across hosts. The key's slot row keeps its last success (`last_success_run`,
/// `last_success_at`), written by the transaction that records the success and releases the key
/// (`FleetJournal.release`), which holds the row; a trigger reads it in its own transaction,
/// after it holds the same row. So every decision about the key sees every success committed
/// before it, and none decided after it: the window is exact whichever host runs or triggers.
/// Both ends of the window are the database's clock, so hosts' clocks never stretch or shrink it.
/// The rule itself is the engine's (`KeyDecision.decide`, from the view's `lastSuccess`), as on one machine.
enum FleetCooldown {
    /// The database's clock in µs since the epoch (as `Timestamp`), read when the statement
    /// evaluates it.
    static let databaseNow = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"

    /// The key's last success (run id and when, by the database's clock); no row when the key
    /// never succeeded or the run is gone (pruned). Sent after the statement that locks the key's
    /// row; the clock it is compared with is the one the transaction read (`FleetPauses.clockAndPause`).
    static func lastSuccess(of key: String) -> FleetJournal.Statement {
        ("""
            SELECT r.id, k.last_success_at FROM keys k \(FleetKeyRuns.run("k.last_success_run")) WHERE k.key = $1
            """, [key])
    }

    /// `lastSuccess`'s row: the key's last success; nil without one.
    static func lastSuccess(_ row: [String?]?) -> KeyDecision.LastSuccess? {
        guard let row, row.count >= 2, let id = row[0].flatMap({ Int64($0) }), let at = row[1].flatMap({ Int64($0) }) else { return nil }
        return KeyDecision.LastSuccess(run: id, at: Timestamp(rawValue: at))
    }
}
