import BatonCore
import FoundationEssentials

/// The fleet's store as the conductor and the service see it: writes through `FleetWriter` (a
/// connection of its own), queries through `FleetHistory` (the pool's connections).
public final class FleetStore: RunStore, HistoryReader, Sendable {
    public let pool: PGPool
    private let writer: FleetWriter
    private let history: FleetHistory
    /// Searches' connection, outside the pool (`FleetHistory.search`).
    private let searcher: PGWorker

    /// `company` (the coordinator's, `FleetCoordinator.company`): whether the writer's commits
    /// notify; nil, they always do.
    public init(pool: PGPool, host: FleetHost, company: FleetCompany? = nil, reactor: Reactor, onProblem: @escaping @Sendable (String?) -> Void,
                onLost: @escaping @Sendable ([Int64]) -> Void) {
        self.pool = pool
        writer = FleetWriter(conninfo: pool.conninfo, defaults: pool.defaults, host: host, company: company, reactor: reactor,
                             onProblem: onProblem, onLost: onLost)
        history = FleetHistory(pool: pool)
        // At most 16 searches wait, as on one host: more are refused at once.
        searcher = PGWorker(name: "baton-fleet-search", conninfo: pool.conninfo, defaults: pool.defaults, capacity: 16)
    }

    /// libpq settings batond uses unless the connection string says otherwise: a connect timeout,
    /// TCP keepalives and a user timeout, so that a dead path fails a query within the lease.
    public static func connectionDefaults(host: String, lease: Duration) -> [String: String] {
        let leaseMS = max(lease / .milliseconds(1), 1_000)
        return ["connect_timeout": "5", "keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2",
                "keepalives_count": "3", "tcp_user_timeout": String(Int(leaseMS / 2)), "application_name": "batond \(host)"]
    }

    public func enqueue(_ entries: [JournalEntry], completion: @escaping @Sendable (Result<Void, BatonError>) -> Void) {
        writer.enqueue(entries, completion: completion)
    }

    /// The fleet recovers in `FleetLease.recoverOwnHost`, not through the conductor.
    public func recoverableState() throws(BatonError) -> RecoverableState { RecoverableState(nextRunID: 1, unfinished: []) }

    /// From now on, the transaction that writes the ends of this host's runs also starts the
    /// queued runs that `coordinator` may start then (`FleetCoordinator.startAfterEnds`).
    public func startRuns(with coordinator: FleetCoordinator) {
        writer.startRuns(with: coordinator)
    }

    public var unavailableReason: String? { writer.unavailableReason }

    /// Why the store cannot be used yet (batond has not joined the fleet), or nil once it can.
    public func waiting(_ reason: String?) { writer.waiting(reason) }

    /// Writes what is queued (for a few seconds at most), then closes the pool's connections;
    /// returns how many items were left unwritten.
    public func close() -> Int {
        let left = writer.close()
        searcher.close(timeout: .seconds(1))
        pool.close(timeout: .seconds(1))
        return left
    }

    /// Waits until the writer comes round between batches and retries: it is not stuck.
    public func ping() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in writer.ping { continuation.resume() } }
    }

    public func runs(_ filter: HistoryFilter) async throws(BatonError) -> [RunSnapshot] { try await history.runs(filter) }
    /// The run a webhook delivery made or joined, as whichever host took it recorded it; nil when none did.
    public func run(ofDelivery delivery: String, hook: String) async throws(BatonError) -> Int64? {
        try await history.read { db in try db.query(FleetJournal.findDelivery(hook: hook, delivery: delivery)).first?[0].flatMap { Int64($0) } }
    }
    public func run(_ id: Int64) async throws(BatonError) -> RunDetail? { try await history.run(id) }
    /// The run's kept output from `offset`, whichever host ran it.
    public func output(of run: Int64, from offset: Int64, maxBytes: Int) async throws(BatonError) -> OutputPage? {
        try await history.read { db in try FleetOutput.page(of: run, from: offset, maxBytes: maxBytes, on: db) }
    }
    /// The files the run kept (`artifacts`), whichever host ran it (`FleetArtifacts`).
    public func artifacts(of run: Int64) async throws(BatonError) -> ArtifactList { try await history.artifacts(of: run) }
    public func artifact(of run: Int64, named name: String, from offset: Int64, maxBytes: Int) async throws(BatonError) -> ArtifactPiece? {
        try await history.artifact(of: run, named: name, from: offset, maxBytes: maxBytes)
    }
    public func stats(actions: [String], since: Timestamp?) async throws(BatonError) -> [ActionStats] {
        try await history.stats(actions: actions, since: since)
    }
    public func denied(limit: Int) async throws(BatonError) -> [TriggerRecord] { try await history.denied(limit: limit) }

    public func events(_ filter: HistoryFilter) async throws(BatonError) -> [ActionEvent] { try await history.events(filter) }
    /// Every host's runs whose output or params hold the text (`FleetSearch`).
    public func search(_ text: String, _ filter: HistoryFilter, stop: @escaping @Sendable () -> Bool) async throws(BatonError) -> SearchResult {
        try await FleetHistory.search(text, filter, on: searcher, stop: stop)
    }
    /// Makes the fleet's search index unless it is there (`search: "index"`, `FleetSearch.makeIndex`),
    /// on a connection of its own, outside any transaction; `log` hears what it does.
    public func makeSearchIndex(log: @escaping @Sendable (String) -> Void) async {
        let worker = pool.dedicated(name: "baton-fleet-index", idleTimeout: .zero)
        defer { worker.close(timeout: .seconds(1)) }
        do {
            switch try await worker.run({ db in try FleetSearch.makeIndex(on: db, willMake: log) }) {
            case .present: break
            case .made: log("the fleet's search index \(FleetSearch.index) is made: searches use it")
            case .otherHostMaking: log("another host is making the fleet's search index; searches read the newest output meanwhile")
            case let .impossible(why): log("search: \"index\" cannot make the fleet's search index: \(why); searches read the newest output")
            }
        } catch {
            log("the fleet's search index could not be made (PostgreSQL: \(error)); searches read the newest output")
        }
    }
    public func lastEnded() async throws(BatonError) -> [RunSnapshot] { try await history.lastEnded() }
    public func recentDurations(of actions: [String]) async throws(BatonError) -> [String: [Int64]] {
        try await history.recentDurations(of: actions)
    }

    /// Applies retention to every host's ended runs, as one machine's history does: success and
    /// cancelled runs past `maxAge`, failures past `keepFailures`, and ended runs beyond the newest
    /// `maxRunsPerAction` of each action. Runs in flight are never removed, nor runs a webhook
    /// delivery made within `Retention.deliveryKeep`, nor runs an unfinished run needs
    /// (`run_needs`: its wait decides from how they ended), nor successes within their action's
    /// cooldown (`cooling`, `Retention.cooling`), as one machine's (`PruneSelection`).
    public func prune(retention: Retention, overrides: [String: Retention.Override], cooling: [String: Duration] = [:], now: Timestamp = .now,
                      dryRun: Bool) async throws(BatonError) -> PruneReport {
        // A write: not tried again on a new connection (unlike reads), and its failure says "written".
        do { return try await pool.run { db in try Self.prune(retention: retention, overrides: overrides, cooling: cooling, now: now, dryRun: dryRun, on: db) } }
        catch { throw .storeUnavailable("PostgreSQL: \(error)") }
    }

    /// The bytes of output a run keeps: its chunks, or an older run's tail.
    private static let outputBytes = """
        coalesce((SELECT sum(length(bytes)) FROM output_chunks WHERE run_id = runs.id),
                 (SELECT length(tail) FROM outputs WHERE run_id = runs.id), 0)
        """

    /// A run's artifacts' bytes: every row's size (published or not, all go with the run).
    private static let artifactBytes = "(SELECT coalesce(sum(size), 0) FROM artifacts WHERE run_id = runs.id)"

    private static func prune(retention: Retention, overrides: [String: Retention.Override], cooling: [String: Duration], now: Timestamp,
                              dryRun: Bool, on db: PGConnection) throws -> PruneReport {
        var report = PruneReport(dryRun: dryRun)
        for name in try db.query("SELECT DISTINCT action FROM runs").rows.compactMap({ $0[0] }) {
            let rule = retention.overridden(by: overrides[name])
            let selection = """
                action = $1 AND phase IN ('success', 'failure', 'cancelled') AND (
                  (phase <> 'failure' AND ended_at < $2::bigint) OR (phase = 'failure' AND ended_at < $3::bigint)
                  OR id < coalesce((SELECT id FROM runs WHERE action = $1 AND phase IN ('success', 'failure', 'cancelled')
                                    ORDER BY id DESC OFFSET $4::bigint LIMIT 1) + 1, 0))
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.run_id = runs.id AND d.at >= $5::bigint)
                AND NOT EXISTS (SELECT 1 FROM run_needs n JOIN runs w ON w.id = n.run_id
                                WHERE n.needed_run = runs.id AND w.phase NOT IN ('success', 'failure', 'cancelled'))
                AND NOT (phase = 'success' AND ended_at >= $6::bigint)
                """
            // A run's output goes with it (ON DELETE CASCADE); a dry run counts its bytes, as one host's does.
            let sql = dryRun ? "SELECT count(*), coalesce(sum(\(outputBytes)), 0), coalesce(sum(\(artifactBytes)), 0) FROM runs WHERE \(selection)"
                : "WITH gone AS (DELETE FROM runs WHERE \(selection) RETURNING 1) SELECT count(*), NULL, NULL FROM gone"
            let row = try db.query(sql, [name, String(now.rawValue - rule.maxAge.microseconds),
                                         String(now.rawValue - rule.keepFailures.microseconds),
                                         String(max(rule.maxRunsPerAction, 0)),
                                         String(now.rawValue - Retention.deliveryKeep.microseconds),
                                         String(cooling[name].map { now.rawValue - $0.microseconds } ?? .max)]).first
            let removed = Int(row?[0] ?? "") ?? 0
            if removed > 0 { report.removed[name] = removed }
            if dryRun {
                report.outputBytes = (report.outputBytes ?? 0) + (row?[1].flatMap { Int64($0) } ?? 0)
                report.artifactBytes = (report.artifactBytes ?? 0) + (row?[2].flatMap { Int64($0) } ?? 0)
            }
        }
        return report
    }
}
