import BatonCore
import FoundationEssentials

/// A host that comes back under its name while the lease of its previous start still holds (a
/// stop, a restart in place or a crash that handed its runs to their shims) takes those runs back
/// (issue 41, part 3; docs/scale-out.md, "A host's restart keeps its runs"). The new start is a
/// new incarnation: in one transaction, which holds the reaper's lock (so no reaper counts the
/// old lease out meanwhile), it checks that the old lease has not run out, moves the old start's
/// loading runs whose shim lives (or kept their status) to itself, and the takeover of the old
/// start (`FleetTakeover`) then ends the rest and marks it gone. A run another host took over
/// first is no longer the old start's: the move, guarded by the old incarnation, passes it by.
enum FleetTakeBack {
    /// The reaper's lock, held to the end of the transaction: taken first, before any key row.
    static var reaperLock: (sql: String, parameters: [String?]) {
        ("SELECT pg_advisory_xact_lock($1)", [String(FleetSchema.Lock.reaper.rawValue)])
    }

    /// Whether `dead`'s lease still holds to its guard's deadline (not given up, renewed within
    /// the fence's time, `lease - max(lease / 4, 300 ms)`, as the database counts): past it, its
    /// guard may have killed the runs, and a run it killed must not be moved.
    static func leaseHolds(_ dead: String, on db: PGConnection) throws -> Bool {
        try db.query("""
            SELECT 1 FROM hosts WHERE incarnation = $1 AND gone_at IS NULL
            AND renewed_at + (lease_ms - greatest(lease_ms / 4, 300)) * interval '1 millisecond' > now() FOR UPDATE
            """, [dead]).first != nil
    }

    /// The tag (`BATON_INSTANCE`) each of `starts` recorded; `assuming` for a start of an older
    /// batond that recorded none.
    static func instances(of starts: [String], assuming instance: String, on db: PGConnection) throws -> [String: String] {
        var tags: [String: String] = [:]
        for start in starts {
            tags[start] = try db.query("SELECT instance FROM hosts WHERE incarnation = $1", [start]).first?[0] ?? instance
        }
        return tags
    }

    enum LoadingPart: Hashable, Sendable { case seq, pgid, pgidStart, outputTotal, stop }
    /// A loading run with its last seq, its process group, the bytes of output kept and its stop mark.
    static let loadingColumns = FleetSelect<LoadingPart>(run: nil, [
        (.seq, ["last_seq"]), (.pgid, ["pgid"]), (.pgidStart, ["pgid_start"]),
        (.outputTotal, ["(SELECT total FROM output_totals o WHERE o.run_id = runs.id)"]), (.stop, ["stop"]),
    ])

    /// The loading runs of `dead`, as the conductor recovers a previous daemon's runs.
    static func loadingRuns(of dead: String, on db: PGConnection) throws -> [UnfinishedRun] {
        try db.query("""
            SELECT \(loadingColumns.sql) FROM runs WHERE incarnation = $1 AND phase = 'loading' ORDER BY id
            """, [dead]).rows.map { row in
            var unfinished = UnfinishedRun(run: FleetRows.run(row), lastSeq: Int(loadingColumns.value(row, .seq) ?? "") ?? 1)
            unfinished.pgid = loadingColumns.value(row, .pgid).flatMap { Int32($0) }
            unfinished.pgidIdentity = loadingColumns.value(row, .pgidStart)
            unfinished.outputTotal = loadingColumns.value(row, .outputTotal).flatMap { Int64($0) }
            // A cancel or a replace asked before the restart: the survivor taken back is stopped as asked at once
            // (`ConductorState.recover`), not a feed's tick later.
            unfinished.stop = loadingColumns.value(row, .stop).map(RunMachine.Stop.init(recordText:))
            return unfinished
        }
    }

    enum RetryingPart: Hashable, Sendable { case seq, due, outputTotal }
    /// A retrying run with its last seq and when its next attempt is due: its last `retrying`
    /// transition's time plus its backoff, as one machine's history tells it (`History.recoverableState`).
    static let retryingColumns = FleetSelect<RetryingPart>(run: nil, [
        (.seq, ["last_seq"]),
        (.due, ["(SELECT t.at + coalesce((t.detail::jsonb ->> 'backoff')::bigint, 0) FROM transitions t "
                + "WHERE t.run_id = runs.id AND t.to_phase = 'retrying' ORDER BY t.seq DESC LIMIT 1)"]),
        (.outputTotal, ["(SELECT total FROM output_totals o WHERE o.run_id = runs.id)"]),
    ])

    /// The retrying runs of `dead` that no hook made (a hook's run is told the output of the run
    /// that fired it, which lived in batond's memory), each with its due time.
    static func retryingRuns(of dead: String, on db: PGConnection) throws -> [UnfinishedRun] {
        try db.query("""
            SELECT \(retryingColumns.sql) FROM runs WHERE incarnation = $1 AND phase = 'retrying' AND hook_run IS NULL ORDER BY id
            """, [dead]).rows.map { row in
            var unfinished = UnfinishedRun(run: FleetRows.run(row), lastSeq: Int(retryingColumns.value(row, .seq) ?? "") ?? 1)
            unfinished.retryDue = retryingColumns.value(row, .due).flatMap { Int64($0) }.map(Timestamp.init(rawValue:))
            unfinished.outputTotal = retryingColumns.value(row, .outputTotal).flatMap { Int64($0) }
            return unfinished
        }
    }

    /// The stops marked on `incarnation`'s retrying runs, and with `loading`, its loading ones too
    /// (`StopRequest`: a cancel or a replace asked while no conductor held the run): such a run ends
    /// as its mark says, never resumed nor restarted.
    static func stopMarks(of incarnation: String, loading: Bool = false, on db: PGConnection) throws -> [Int64: RunMachine.Stop] {
        let phases = loading ? "('loading', 'retrying')" : "('retrying')"
        let rows = try db.query("SELECT id, stop FROM runs WHERE incarnation = $1 AND phase IN \(phases) AND stop IS NOT NULL", [incarnation]).rows
        return Dictionary(rows.compactMap { row -> (Int64, RunMachine.Stop)? in
            guard let id = row[0].flatMap({ Int64($0) }), let text = row[1] else { return nil }
            return (id, RunMachine.Stop(recordText: text))
        }, uniquingKeysWith: { first, _ in first })
    }

    /// Moves `ids` from `dead` to `me`, fenced by `dead`'s incarnation and the runs' `phase`: returns those moved.
    static func move(_ ids: [Int64], from dead: String, to me: FleetHost, phase: Phase = .loading, on db: PGConnection) throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        let list = "{" + ids.map(String.init).joined(separator: ",") + "}"
        return Set(try db.query("""
            UPDATE runs SET incarnation = $2, host = $3 WHERE incarnation = $1 AND phase = $5 AND id = ANY ($4::bigint[]) RETURNING id
            """, [dead, me.incarnation, me.name, list, phase.rawValue]).rows.compactMap { $0[0].flatMap { Int64($0) } })
    }
}
