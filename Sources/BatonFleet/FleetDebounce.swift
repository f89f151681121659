import BatonCore

/// Debounce across hosts. A debounced run's window lives in its row (`debounce_first`,
/// `debounce_until`, `debounce_window`, `debounce_max_wait`, fleet schema version 13) until it
/// starts. A debounced trigger's transaction, holding the key's slot row, reads the windows of
/// the key's runs that have not started and the database's clock into the key's `KeyFacts`: the
/// engine chooses the run to share (`KeyDecision.pending`, as one machine) and pushes its
/// deadline back (`DebounceWindow.restart`), or, when there is none, gives the run the trigger
/// creates a window that opens then; this writes the window back. The run's host
/// starts it only once `debounce_until` has passed by the database's clock, read in the
/// transaction that holds the same row (`startable`), so neither a host's clock nor a timer that
/// fires early starts it inside its window; its timer is only a wake-up (`FleetCoordinator`'s
/// `armDebounce`). The `loading` transition clears `debounce_until`.
enum FleetDebounce {
    /// Each of the key's holder and follow-up that is queued with its window open or due (its id,
    /// first, deadline, window, maxWait); one row of NULLs when neither is (a `LEFT JOIN` on a
    /// constant: one row always). Sent after the statement that locks the key's row; the clock
    /// the windows are compared with is the one the transaction read (`FleetPauses.clockAndPause`).
    static func pending(of key: String) -> FleetJournal.Statement {
        ("""
            SELECT r.id, r.debounce_first, r.debounce_until, r.debounce_window, r.debounce_max_wait
            FROM (SELECT 1) c
            LEFT JOIN (\(FleetKeyRuns.heldAndLined("r.id, r.debounce_first, r.debounce_until, r.debounce_window, r.debounce_max_wait",
                                                     where: "k.key = $1 AND r.phase = 'queued' AND r.debounce_until IS NOT NULL"))) r ON true
            """, [key])
    }

    /// `pending`'s rows: the windows of the key's holder and follow-up as kept, for the engine to
    /// choose the run to share (`KeyFacts.windows`, `KeyDecision.pending`). Nil without a row.
    static func reading(_ rows: [[String?]]) -> [Int64: DebounceWindow]? {
        guard !rows.isEmpty else { return nil }
        var windows: [Int64: DebounceWindow] = [:]
        for row in rows {
            guard row.count >= 5, let id = row[0].flatMap({ Int64($0) }), let first = row[1].flatMap({ Int64($0) }),
                  let until = row[2].flatMap({ Int64($0) }), let window = row[3].flatMap({ Int64($0) }),
                  let maxWait = row[4].flatMap({ Int64($0) }) else { continue }
            windows[id] = DebounceWindow(window: .microseconds(window), maxWait: .microseconds(maxWait), first: Timestamp(rawValue: first),
                                         deadline: Timestamp(rawValue: until))
        }
        return windows
    }

    /// Keeps a run's window in its row (a new one, or one pushed back), while the run is queued.
    static func store(_ window: DebounceWindow, run: Int64) -> FleetJournal.Statement {
        ("""
            UPDATE runs SET debounce_first = $2, debounce_until = $3, debounce_window = $4, debounce_max_wait = $5
            WHERE id = $1 AND phase = 'queued'
            """, [String(run), String(window.first.rawValue), String(window.deadline.rawValue), String(window.window.microseconds),
                  String(window.maxWait.microseconds)])
    }

    /// The SQL condition, on a run `r` whose key's row is held, that its window (if any) has
    /// passed by the database's clock: what a start checks.
    static let due = "(r.debounce_until IS NULL OR r.debounce_until <= \(FleetCooldown.databaseNow))"

    /// This host's queued runs that hold their key and wait for their window, with its deadline
    /// as kept and the database's clock (the engine says what is left: `DebounceWindow.left`):
    /// what its timers wake it for.
    static func waiting(incarnation: String) -> FleetJournal.Statement {
        ("""
            SELECT r.id, r.debounce_until, \(FleetCooldown.databaseNow) FROM runs r JOIN keys k ON k.key = r.key AND k.holder = r.id
            WHERE r.incarnation = $1 AND r.phase = 'queued' AND r.debounce_until IS NOT NULL
            """, [incarnation])
    }
}
