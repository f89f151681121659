import BatonCore
import FoundationEssentials

/// What happens to the runs of a batond that is gone (its lease ran out, or it is this host's
/// previous start): each becomes a recorded transition, guarded by its dead owner, so that a
/// run ended meanwhile is left alone. A loading or retrying run ends as `failure` (reason
/// `host_lost`, or `interrupted` for this host's own previous start), or is queued again here
/// when its action says `onInterrupt: "restart"`; a loading or retrying run a stop marked (`runs.stop`) ends as
/// the mark says; a retrying run one machine's restart would
/// resume (`RecoveryDecision.mayResumeRetrying`) is moved here, for this host's conductor to wait
/// out its backoff (`Summary.resumed`; its conductor finds it in the rows: `FleetCoordinator.resumeMoved`); a queued run is taken over by this host and
/// keeps its place (a debounced one waits out a window from the takeover); a run that would start (again) but whose
/// action has a secret param ends `failure`, reason `secret`; a run whose action this host does not have is cancelled, one whose
/// definition it refuses ends `failure`, reason `definition`. Each is decided by its run's definition (`takeOver`). A failure it writes
/// counts towards its action's `pauseAfterFailures` as any other end does (`FleetPauses.count`, in
/// the same transaction), as one machine's restart counts the runs it ends `interrupted`.
enum FleetTakeover {
    struct Summary: Sendable, Equatable {
        var ended: [Int64] = []
        var requeued: [Int64] = []
        var adopted: [Int64] = []
        var dropped: [Int64] = []
        /// Retrying runs moved here to wait out their backoff, with their due time (`FleetTakeBack.retryingRuns`).
        var resumed: [UnfinishedRun] = []
        /// Loading or retrying runs a cancel or a replace marked, ended as the mark says (`RecoveryDecision.endStopped`).
        var stopped: [Int64] = []
        var isEmpty: Bool { ended.isEmpty && requeued.isEmpty && adopted.isEmpty && dropped.isEmpty && resumed.isEmpty && stopped.isEmpty }
    }

    /// The locks a takeover of `incarnations` takes first, of the `actions` (the configured ones,
    /// as `takeOver` is given them) they have unfinished runs of: the pause lock of each whose
    /// failures are counted, in key order (`FleetPauses`' lock order: before any row), then the slot
    /// rows of their runs' keys and of the hook keys their ends may trigger (`FleetHooks.lockForTakeover`).
    /// Only those: a takeover that locked every counted action's pause waited for any host's end or
    /// pause of an action the gone host had no run of (review-fleet7, 3). A run of another action
    /// that a gone host still alive made after this look is taken over all the same: its count's
    /// compare-and-set (`FleetPauses.keep`), or PostgreSQL's deadlock check on a hook key locked
    /// late, fails the transaction rather than lose or double a count, and the next try locks it.
    static func locks(_ incarnations: [String], actions: [Action], on db: PGConnection) throws -> [FleetJournal.Statement] {
        let names = Set(try db.query("""
            SELECT DISTINCT action FROM runs WHERE incarnation = ANY ($1::text[]) AND phase IN ('queued', 'loading', 'retrying')
            """, [FleetJournal.textArray(incarnations)]).rows.compactMap { $0[0] })
        let theirs = actions.filter { names.contains($0.name) }
        return FleetAdvisoryLock.statements(theirs.filter { $0.pauseAfterFailures != nil }.map { FleetPauses.lock($0.name) })
            + FleetHooks.lockForTakeover(incarnations, actions: theirs)
    }

    /// Takes over `dead`'s unfinished runs and marks it gone, in the caller's transaction, which
    /// holds `locks` of the configured actions. Each run is decided by the definition it was
    /// triggered with (`definitions`: `FleetCoordinator.definitions(of:on:)`, audit D4, review M2):
    /// whether it restarts, resumes, fires hooks, counts failures, waits out a window; not by the
    /// taking host's config of the moment. A definition this host refuses (its process is not one
    /// this host configured) ends the run `failure`, reason `definition`, as a start would.
    static func takeOver(_ dead: String, name: String, reason: String, by me: FleetHost,
                         definitions: ([RunSnapshot]) throws -> [Int64: RunDefinition], on db: PGConnection) throws -> Summary {
        var summary = Summary()
        let owner = FleetHost(name: name, incarnation: dead, lease: me.lease)
        let rows = try db.query("""
            SELECT \(FleetRows.withSeq.sql) FROM runs
            WHERE incarnation = $1 AND phase IN ('queued', 'loading', 'retrying') ORDER BY id
            """, [dead]).rows.map(FleetRows.runAndSeq)
        let defined = try definitions(rows.map(\.0))
        let retrying = Dictionary(try FleetTakeBack.retryingRuns(of: dead, on: db).map { ($0.run.id, $0) }, uniquingKeysWith: { first, _ in first })
        let marks = try FleetTakeBack.stopMarks(of: dead, loading: true, on: db)
        for (run, seq) in rows {
            let definition = defined[run.id] ?? .none
            let action = definition.action
            let at = Timestamp.now
            func end(_ phase: Phase, _ detail: TransitionDetail) throws {
                let transition = Transition(runID: run.id, seq: seq + 1, from: run.phase, to: phase, at: at, detail: detail)
                guard let applied = try FleetJournal.applied(transition, on: db, as: owner) else { return }
                // An end the reaper writes fires its hooks as the run's host would have, in this
                // transaction; their runs are this host's.
                if let action, let firing = HookFiring(run: run.applying(transition), hooks: action.hooks) {
                    try FleetHooks.fire(firing, previous: applied.previousOutcome, on: db, as: me)
                }
                // Counted as the run's host would have counted its end (its action's pause lock held: `locks`).
                if let action, let most = action.pauseAfterFailures {
                    _ = try FleetPauses.count(run: run.id, action: action.name, most: most, on: db, host: me.name)
                }
            }
            // The facts and the decision are a host's recovery's (`RecoveryDecision.facts`): a queued
            // run never started, and a loading or retrying one is queued again only where its action
            // says `restart`; a retrying one waits out its backoff here where one machine's restart
            // resumes it; one a replace is stopping (its key's `draining`) is neither; one a cancel or
            // a replace marked ends as the mark says (`endStopped`).
            var unfinished = retrying[run.id] ?? UnfinishedRun(run: run, lastSeq: seq)
            unfinished.stop = marks[run.id]
            let refusal = if case let .refused(why) = definition { why } else { String?.none }
            let facts = try RecoveryDecision.facts(unfinished, action: action, refused: refusal != nil, draining: { try isDraining(run, on: db) })
            switch RecoveryDecision.decide(facts) {
            case .endStopped:
                // As the dead host's stop reader would have ended it: never another attempt (not restarted
                // under `onInterrupt: restart`, whose requeue would clear the mark).
                if let mark = marks[run.id] { try end(mark.phase, mark.detail) }
                summary.stopped.append(run.id)
            case .drop:
                try end(.cancelled, TransitionDetail(reason: "removed", error: "action \(run.action) is not configured on \(me.name), which took over from \(name)"))
                summary.dropped.append(run.id)
            case .requeue(restarted: false):
                guard try db.query("UPDATE runs SET host = $2, incarnation = $3 WHERE id = $1 AND incarnation = $4 AND phase = 'queued'",
                                   [String(run.id), me.name, me.incarnation, dead]).affected == 1 else { break }
                // A debounced run waits out a window from the takeover, as one machine's restart's
                // (`RecoveryDecision.window`), by the database's clock that its start is checked with
                // (and its window's first trigger as kept by that clock, where it has one).
                if let action, action.debounce != nil,
                   let row = try db.query("SELECT \(FleetCooldown.databaseNow), debounce_first FROM runs WHERE id = $1", [String(run.id)]).first,
                   let now = row[0].flatMap({ Int64($0) }),
                   let window = RecoveryDecision.window(action, queuedAt: row[1].flatMap { Int64($0) }.map(Timestamp.init(rawValue:)) ?? run.queuedAt,
                                                        at: Timestamp(rawValue: now)) {
                    try db.query(FleetDebounce.store(window, run: run.id))
                }
                summary.adopted.append(run.id)
            case .requeue(restarted: true):
                let transition = Transition(runID: run.id, seq: seq + 1, from: run.phase, to: .queued, at: at,
                                            detail: TransitionDetail(reason: "restarted", error: reason))
                if try FleetJournal.apply(transition, on: db, as: owner) {
                    try db.query("UPDATE runs SET host = $2, incarnation = $3, stop = NULL WHERE id = $1", [String(run.id), me.name, me.incarnation])
                    summary.requeued.append(run.id)
                }
            case .resumeRetrying:
                if let unfinished = retrying[run.id], try FleetTakeBack.move([run.id], from: dead, to: me, phase: .retrying, on: db) == [run.id] {
                    summary.resumed.append(unfinished)
                }
            case .endRefused:
                try end(.failure, TransitionDetail(reason: "definition", error: refusal))
                summary.ended.append(run.id)
            case .endSecret:
                // Its secret's value lived in the memory of the host that is gone: it cannot start
                // (again) with it, nor without it, as at one machine's restart.
                if let action { try end(.failure, RecoveryDecision.secretDetail(action, phase: run.phase)) }
                summary.ended.append(run.id)
            case .interrupt, .adopt:
                try end(.failure, TransitionDetail(reason: dead == me.incarnation ? "interrupted" : (name == me.name ? "interrupted" : "host_lost"), error: reason))
                summary.ended.append(run.id)
            }
        }
        try db.query("UPDATE hosts SET gone_at = now(), gone_reason = $2 WHERE incarnation = $1 AND gone_at IS NULL", [dead, reason])
        if !summary.isEmpty { try db.execute("NOTIFY baton") }
        return summary
    }

    /// Whether a replace is stopping the run (then it ends, it is not restarted).
    private static func isDraining(_ run: RunSnapshot, on db: PGConnection) throws -> Bool {
        try db.query("SELECT 1 FROM keys WHERE key = $1 AND $2::bigint = ANY (draining)", [run.key, String(run.id)]).first != nil
    }
}
