import BatonCore
import FoundationEssentials
import Glibc

/// The fleet's keeper of artifacts (`Migrations/postgres/0019_artifacts.sql`): a connection of
/// its own (a `PGWorker`, one keep at a time, never the loop's or the writer's) reads and digests
/// an attempt's files and writes their chunks, each its own short statement, then publishes them
/// in one transaction, only while the run is still this incarnation's and in flight. Only
/// published rows are read, so any host serves all of an attempt's files or none of them.
///
/// Unpublished rows left behind (a crash, a connection lost mid-keep) are removed before each
/// keep: this incarnation's own (its keeps are one at a time, so none is being written then) and
/// those of every incarnation marked gone. A gone incarnation publishes nothing once marked (by a
/// takeover, or by its own clean stop, which takes over nothing): a publication holds the run's
/// row and checks its owner and that the owner is not marked gone.
/// Rows are never removed by age: a live host may take long over a big file.
public final class FleetArtifacts: ArtifactKeeper {
    /// The bytes of one stored chunk (and one read of a file).
    static let chunk = 1 << 20
    /// The most files one attempt keeps (over it: none, said so).
    static let maxFiles = ArtifactScan.maxFiles

    let host: FleetHost
    private let connection: PGWorker
    let log: @Sendable (String) -> Void
    /// Tests: called on the keeper's thread after each chunk is written (how many so far).
    let afterChunk: (@Sendable (Int) -> Void)?
    /// How long a keep is tried again while PostgreSQL does not answer; the run stays in flight
    /// meanwhile (its end, which needs PostgreSQL too, comes after its files).
    static let retryFor = Duration.seconds(600)
    /// The keeps waiting for their next try on the loop's timers, owned by the loop
    /// (`KeepRetries`): `stopRetrying` (the start of a stop) gives them up at once, and a keep is
    /// not tried again once batond stops. Nil (no loop given): a keep that fails is not tried
    /// again (the failure is logged, the files not kept).
    let retries: LoopOwned<KeepRetries<Retry>>?
    /// Runs its body after a delay: the loop's timer, or a test's.
    public typealias Later = @Sendable (Duration, @escaping @Sendable () -> Void) -> Void
    let later: Later

    /// `reactor`: the loop that owns the keeps waiting for PostgreSQL, whose timers try them
    /// again; nil: a keep that fails is not tried again.
    public convenience init(pool: PGPool, host: FleetHost, log: @escaping @Sendable (String) -> Void, reactor: Reactor? = nil) {
        self.init(pool: pool, host: host, log: log, afterChunk: nil, retrying: reactor.map { ($0, nil) })
    }

    /// Tests: `later` tries the keeps again in place of the loop's timers; retries still need
    /// the loop that owns them, so there is no `later` without a `reactor` (one alone used to
    /// turn retries off silently).
    convenience init(pool: PGPool, host: FleetHost, log: @escaping @Sendable (String) -> Void, afterChunk: (@Sendable (Int) -> Void)?,
                     reactor: Reactor, later: @escaping Later) {
        self.init(pool: pool, host: host, log: log, afterChunk: afterChunk, retrying: (reactor, later))
    }

    convenience init(pool: PGPool, host: FleetHost, log: @escaping @Sendable (String) -> Void, afterChunk: (@Sendable (Int) -> Void)?) {
        self.init(pool: pool, host: host, log: log, afterChunk: afterChunk, retrying: nil)
    }

    private init(pool: PGPool, host: FleetHost, log: @escaping @Sendable (String) -> Void, afterChunk: (@Sendable (Int) -> Void)?,
                 retrying: (reactor: Reactor, later: Later?)?) {
        self.host = host
        self.log = log
        self.afterChunk = afterChunk
        retries = retrying.map { LoopOwned(KeepRetries(), on: $0.reactor) }
        if let later = retrying?.later {
            self.later = later
        } else {
            let reactor = retrying?.reactor
            self.later = { delay, body in _ = reactor?.after(delay, body) }
        }
        connection = pool.dedicated(name: "baton-fleet-art")
    }

    /// Removes what crashes and lost connections left unpublished (`sweep`), now.
    public func sweep(_ done: @escaping @Sendable () -> Void = {}) {
        connection.submit({ [host] db in try FleetArtifactRows.sweep(host.incarnation, on: db) }) { _ in done() }
    }

    public func keep(_ found: ArtifactScan, run: Int64, attempt: Int, done: @escaping @Sendable () -> Void) {
        keep(found, run: run, attempt: attempt, tries: 1, since: .now, done: done)
    }

    /// One try of a keep. Tried once more on a new connection when the one kept open broke
    /// meanwhile (a server restart): a keep may run twice (its rows begun again, its chunks the
    /// same, one publication). PostgreSQL down (a connection problem): tried again after a
    /// backoff (1 s, doubling, at most 30 s) for up to `retryFor`, the run held in flight (its
    /// `done` not called) until the files are kept or that time is past.
    func keep(_ found: ArtifactScan, run: Int64, attempt: Int, tries: Int, since: ContinuousClock.Instant,
              done: @escaping @Sendable () -> Void) {
        connection.submit({ [self] db in try keepNow(found, run: run, attempt: attempt, on: db) }, retryingBroken: true) { [self] result in
            guard case let .failure(error) = result else { return done() }
            if retries != nil, (error as? PGError)?.isConnectionProblem == true, ContinuousClock.now - since < Self.retryFor {
                let retry = Retry(found: found, run: run, attempt: attempt, tries: tries, since: since, error: "\(error)", done: done)
                return retrying(.wait(retry, after: Self.backoff(tries)))
            }
            giveUp(run: run, attempt: attempt, "\(error)", toldFirst: (error as? PGError)?.isConnectionProblem == true, done: done)
        }
    }

    /// Ends a keep without its files: logged, what it began removed, and recorded with the run (its
    /// notices: `baton show` says the files were not kept and why, as for a run over its bound),
    /// only while the run is still this incarnation's. Where PostgreSQL answered (the keep failed
    /// on a statement), recorded before the run is told; where the cause is a stop or a
    /// connection problem (`told`), the run is told first, so that its end never waits on a
    /// server that may not answer, and the record is best-effort after. A record that fails is logged.
    func giveUp(run: Int64, attempt: Int, _ why: String, toldFirst: Bool, done: @escaping @Sendable () -> Void) {
        log("the artifacts of run \(run) (attempt \(attempt)) could not be kept on PostgreSQL: \(why)")
        let notice = "attempt \(attempt): no file kept: PostgreSQL could not take them (\(why))"
        // Queued before the run is told (`toldFirst`): a stop that closes this connection once the
        // run ended runs what is queued; told first, the record came after the close and was refused.
        defer { if toldFirst { done() } }
        connection.submit({ [host] db in
            // What it began goes now (the next keep's sweep would remove it too).
            try FleetArtifactRows.removeBegun(run: run, attempt: attempt, incarnation: host.incarnation, on: db)
            try FleetArtifactRows.recordGiveUp(notice, run: run, attempt: attempt, incarnation: host.incarnation, on: db)
        }, retryingBroken: true) { [log] result in
            if case let .failure(error) = result { log("the artifacts of run \(run) (attempt \(attempt)) not kept could not be recorded with it: \(error)") }
            if !toldFirst { done() }
        }
    }

    /// At the start of a stop (before its drain): the keeps waiting for PostgreSQL give up now,
    /// their runs ending without their files, and a keep that fails from now on is not tried again.
    public func stopRetrying() {
        retrying(.stop)
    }

    /// The wait before try `tries + 1`: 1 s, doubling, at most 30 s.
    static func backoff(_ tries: Int) -> Duration { .seconds(min(1 << min(tries - 1, 5), 30)) }

    /// Closes the keeper's connection once what is queued is done (at most `timeout`).
    public func close(timeout: Duration = .seconds(5)) {
        stopRetrying()
        connection.close(timeout: timeout)
    }

    /// On the keeper's thread: the sweep, the rows, the chunks, the digests, then the
    /// publication. A statement that fails ends it: nothing of this attempt is published.
    private func keepNow(_ found: ArtifactScan, run: Int64, attempt: Int, on db: PGConnection) throws {
        // A host frozen (SIGSTOP) inside a transaction would hold the run's row and stall a
        // takeover: the server ends its session after half a lease idle in one.
        try db.execute("SET idle_in_transaction_session_timeout = \(Self.idleInTransactionMS(lease: host.lease))")
        do { try FleetArtifactRows.sweep(host.incarnation, on: db) } catch let error as PGError where !error.isConnectionProblem {
            // Two hosts sweeping one gone host's rows may deadlock: the keep goes on, the next sweep finishes it.
        }
        var found = found
        if found.files.count > Self.maxFiles {
            found.notices.append("\(found.files.count) files, more than \(Self.maxFiles): none kept")
            found.files = []
        }
        let files = found.files
        guard let ids = try FleetArtifactRows.begin(files, run: run, attempt: attempt, at: .now, incarnation: host.incarnation, on: db) else {
            return log("run \(run) is no longer this host's: the artifacts of its attempt \(attempt) are not kept")
        }
        var notices = found.notices, kept: [FleetArtifactRows.Kept] = [], chunks = 0
        for (file, id) in zip(files, ids) {
            switch try copy(file, of: found, id: id, on: db, chunks: &chunks) {
            case let .success(file): kept.append(file)
            case let .failure(refused): notices.append(refused.notice ?? "\(file.name): not kept")
            }
        }
        guard let unpublished = try FleetArtifactRows.publish(kept, notices: notices, run: run, attempt: attempt,
                                                              incarnation: host.incarnation, on: db) else {
            try FleetArtifactRows.removeBegun(run: run, attempt: attempt, incarnation: host.incarnation, on: db)
            return log("run \(run) was taken over by another host while its files were written: the artifacts of its attempt \(attempt) are not published")
        }
        // The rows the publication left unpublished (an earlier attempt's, a file not read), after its commit.
        try FleetArtifactRows.removeUnpublished(run: run, unpublished: unpublished, incarnation: host.incarnation, on: db)
    }

    /// Half the lease, in milliseconds (at least 500).
    static func idleInTransactionMS(lease: Duration) -> Int64 { Int64(max(lease / .milliseconds(1), 1_000) / 2) }

    /// Why a file was not kept: what the run's notices say of it (never nil here: a statement that fails throws).
    typealias NotKept = ArtifactNotKept

    /// One file copied into chunk rows (`ArtifactScan.copy`). A statement that fails throws (the keep ends).
    private func copy(_ file: ArtifactScan.File, of found: ArtifactScan, id: Int64, on db: PGConnection,
                      chunks: inout Int) throws -> Result<FleetArtifactRows.Kept, NotKept> {
        var count = chunks
        defer { chunks = count }
        return try found.copy(file, chunk: Self.chunk) { bytes, start in
            try FleetArtifactRows.writeChunk(bytes, of: id, at: start, on: db)
            count += 1
            afterChunk?(count)
            return true
        }.map { FleetArtifactRows.Kept(id: id, size: $0.size, sha256: $0.sha256) }
    }
}
