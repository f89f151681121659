import BatonCore
import FoundationEssentials

/// Which ended runs of one action retention removes: older than its age limits, or beyond the
/// newest `maxRunsPerAction`. Queued, loading and retrying runs never match, nor do runs a webhook
/// delivery made within `Retention.deliveryKeep` (their delivery rows go with them), nor runs an
/// unfinished run needs (`run_needs`): a waiting run decides from how they ended, after a restart too;
/// nor successes within their action's cooldown (`Retention.cooling`).
struct PruneSelection {
    var action: String
    var retention: Retention
    /// The action's cooldown: its successes ended within it are kept.
    var cooling: Duration?
    var now: Timestamp
    /// Ended runs with an id below this are beyond the per-action count; 0 when within it.
    var countCutoff: Int64

    var whereClause: String {
        """
        action = ? AND phase IN ('success', 'failure', 'cancelled') AND ended_at IS NOT NULL AND (
            (phase <> 'failure' AND ended_at < ?) OR (phase = 'failure' AND ended_at < ?) OR id < ?)
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries WHERE run_id = runs.id AND at >= ?)
        AND NOT EXISTS (SELECT 1 FROM run_needs n JOIN runs w ON w.id = n.run_id
                        WHERE n.needed_run_id = runs.id AND w.phase NOT IN ('success', 'failure', 'cancelled'))
        AND NOT (phase = 'success' AND ended_at >= ?)
        """
    }

    var arguments: [DatabaseValue] {
        [.text(action), .integer(now.rawValue - retention.maxAge.microseconds),
         .integer(now.rawValue - retention.keepFailures.microseconds), .integer(countCutoff),
         .integer(now.rawValue - Retention.deliveryKeep.microseconds),
         .integer(cooling.map { now.rawValue - $0.microseconds } ?? .max)]
    }

    /// How many runs match, the bytes of output they keep (their chunks, or an older run's tail),
    /// and the bytes of their artifacts (every row's size: all go with the run).
    func count(on connection: Connection) throws -> (runs: Int, outputBytes: Int64, artifactBytes: Int64) {
        try connection.withStatement("""
            SELECT count(*), coalesce(sum(
                coalesce((SELECT sum(length(bytes)) FROM output_chunks WHERE run_id = runs.id),
                         (SELECT length(tail) FROM outputs WHERE run_id = runs.id), 0)), 0),
              coalesce(sum((SELECT coalesce(sum(size), 0) FROM artifacts WHERE run_id = runs.id)), 0)
            FROM runs WHERE \(whereClause)
            """) { statement in
            try statement.bind(arguments)
            guard try statement.step() else { return (0, 0, 0) }
            return (Int(statement.int64(0) ?? 0), statement.int64(1) ?? 0, statement.int64(2) ?? 0)
        }
    }

    /// Finds the count cutoff: the id of the oldest run among the newest `maxRunsPerAction` ended ones.
    static func make(action: String, retention: Retention, cooling: Duration?, now: Timestamp, on connection: Connection) throws -> PruneSelection {
        let cutoff = try connection.withStatement("""
            SELECT id FROM runs WHERE action = ? AND phase IN ('success', 'failure', 'cancelled')
            ORDER BY id DESC LIMIT 1 OFFSET ?
            """) { statement -> Int64 in
            try statement.bind([.text(action), .integer(Int64(max(retention.maxRunsPerAction, 1) - 1))])
            return try statement.step() ? statement.int64(0) ?? 0 : 0
        }
        return PruneSelection(action: action, retention: retention, cooling: cooling, now: now, countCutoff: cutoff)
    }
}

extension Store {
    /// Removes ended runs (with their transitions, triggers and output) as retention says, in
    /// batches of `batchSize` runs, each its own short write on the writer thread, so that the
    /// write lock is never held long and transitions of runs in flight interleave with the prune.
    /// With `dryRun`, only counts. `cooling`: each action's cooldown (`Retention.cooling`).
    public func prune(
        retention: Retention, overrides: [String: Retention.Override] = [:], cooling: [String: Duration] = [:], now: Timestamp = .now,
        dryRun: Bool = false, batchSize: Int = 500
    ) async throws -> PruneReport {
        let selections = try await read { history in
            try history.actionNames().map { action in
                try PruneSelection.make(action: action, retention: retention.overridden(by: overrides[action]),
                                        cooling: cooling[action], now: now, on: history.connection)
            }
        }
        var report = PruneReport(dryRun: dryRun)
        for selection in selections {
            var removed = 0
            if dryRun {
                let (runs, bytes, artifacts) = try await read { history in try selection.count(on: history.connection) }
                removed = runs
                report.outputBytes = (report.outputBytes ?? 0) + bytes
                report.artifactBytes = (report.artifactBytes ?? 0) + artifacts
            } else {
                while true {
                    let batch = try await perform { connection in
                        try connection.withStatement(
                            "DELETE FROM runs WHERE id IN (SELECT id FROM runs WHERE \(selection.whereClause) LIMIT \(max(batchSize, 1)))"
                        ) { statement in
                            try statement.bind(selection.arguments)
                            _ = try statement.step()
                        }
                        return connection.changes
                    }
                    removed += batch
                    if batch < max(batchSize, 1) { break }
                }
            }
            if removed > 0 { report.removed[selection.action] = removed }
        }
        return report
    }
}
