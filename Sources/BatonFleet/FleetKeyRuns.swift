/// How the fleet's statements read the runs a key row names (its holder, the runs in its line,
/// its last success): each one looked up by the runs' primary key, never a join PostgreSQL may
/// plan as a scan of every run.
///
/// Why the fence: the fleet prepares its statements, and PostgreSQL keeps a prepared statement's
/// generic plan once it has one. Planned while `runs` is small or never analyzed (a new fleet, a
/// bench's first seconds), a plain join `keys k JOIN runs r ON r.id = k.holder` becomes a hash
/// join over a sequential scan of `runs`, and `r.id = ANY (array_prepend(k.holder, k.line))` a
/// nested loop that compares every run with every key; the plan stays while the table grows,
/// until an ANALYZE replaces it (the bench's trigger batches: 1.0 and 0.61 ms a batch, against
/// 0.15 for the holder alone; docs/benchmarks.md). A lateral subquery with `OFFSET 0` is never
/// merged into the join: it is planned alone, as a lookup of one id, for which the primary key
/// wins even against an empty table (`FleetPlanTests`).
enum FleetKeyRuns {
    /// A `FROM` item that joins the run whose id is `id` (an expression on an earlier item, such
    /// as `keys k`) as `r`, by the primary key; no row where the id is NULL or the run is gone.
    static func run(_ id: String) -> String {
        "CROSS JOIN LATERAL (SELECT * FROM runs WHERE id = \(id) OFFSET 0) AS r"
    }

    /// `columns` (on `k` and `r`) of the runs the keys matching `condition` hold and have in line:
    /// each key's holder, then, only for keys whose line is not empty, the line's runs.
    static func heldAndLined(_ columns: String, where condition: String) -> String {
        """
        SELECT \(columns) FROM keys k \(run("k.holder")) WHERE \(condition)
        UNION ALL
        SELECT \(columns) FROM keys k CROSS JOIN LATERAL unnest(k.line) AS l (id) \(run("l.id"))
        WHERE cardinality(k.line) > 0 AND \(condition)
        """
    }
}
