import BatonCore
@testable import BatonFleet
import Foundation
import Testing

/// Issue 42, item 4 across a fleet: a keep that finds PostgreSQL down is not lost with a log line;
/// it is tried again (the reactor's timer; here the test's) until the server answers.
@Suite("End to end: the fleet's artifacts kept once PostgreSQL is back", .offPool)
struct FleetArtifactRetryTests {
    @Test("a keep while PostgreSQL is down is tried again when it answers, the run held until then; its files are kept")
    func whileServerDown() async throws {
        var down = try await DownKeep()
        let (server, logged) = (down.server, down.logged)
        let first = try #require(await down.waiting.next())
        // Down still: tried again, and waits again; the run is not told its files are done.
        first()
        let second = try #require(await down.waiting.next())
        #expect(!down.ended)
        #expect(logged.withLock { $0 }.filter { $0.contains("wait for PostgreSQL") }.count == 2, "\(logged.withLock { $0 })")
        try server.start()
        second()
        await down.kept.value
        let db = try PGConnection(down.conninfo)
        #expect(try FleetArtifactRowsTests.list(db, run: 1).files.map(\.name) == ["a.txt", "sub/deep/b.bin"], "\(logged.withLock { $0 })")
        #expect(try FleetArtifactRowsTests.readBack(db, run: 1, name: "sub/deep/b.bin", pieceBytes: ArtifactPiece.maxBytes) == ArtifactStoreFiles.binary)
        #expect(!logged.withLock { $0 }.contains { $0.contains("could not be kept") })
    }

    @Test("review item 3: a stop gives up a keep waiting for PostgreSQL at once (its run ends), and its timer, fired afterwards, tries nothing")
    func stopWhileServerDown() async throws {
        var down = try await DownKeep()
        let (keeper, logged, conninfo) = (down.keeper, down.logged, down.conninfo)
        let first = try #require(await down.waiting.next())
        #expect(!down.ended)
        // The stop's start: the keep gives up now, not at its timer (up to 30 s away) nor after 10 minutes.
        keeper.stopRetrying()
        // The timer fires afterwards: no try, so no further wait (before the fix: a new retry here, the run held).
        first()
        let next = await down.waiting.next()
        #expect(next == nil, "the keep was tried again after the stop began: \(logged.withLock { $0 })")
        guard next == nil else { return }
        await down.kept.value
        #expect(logged.withLock { $0 }.contains { $0.contains("could not be kept on PostgreSQL: batond is stopping") }, "\(logged.withLock { $0 })")
        // A keep that fails once the stop began is not tried again either.
        try await confirmation("given up at once", expectedCount: 0) { tried in
            let again = FleetArtifactRowsTests.keeper(conninfo, logged: logged, later: { _, _ in tried() })
            again.stopRetrying()
            await FleetArtifactRowsTests.keep(again, down.scan, run: 2)
        }
    }

    @Test("a keep that gives up is recorded with its run: its notices say no file was kept and why, as show prints them")
    func giveUpRecorded() async throws {
        var down = try await DownKeep()
        let (server, keeper, logged, conninfo) = (down.server, down.keeper, down.logged, down.conninfo)
        let first = try #require(await down.waiting.next())
        // PostgreSQL is back, but batond stops first: the keep gives up, and the run keeps why (before: a log line only).
        try server.start()
        keeper.stopRetrying()
        first()
        await down.kept.value
        // The run was told first; the record follows on the keeper's connection (closing it runs what is queued).
        // The record is queued before the run is told (`FleetArtifacts.giveUp`), and a close runs what is
        // queued: bounded at 60 s (against a hang), not the stop's 5, so a slow new connection under load is waited for.
        keeper.close(timeout: .seconds(60))
        let list = try FleetArtifactRowsTests.list(try PGConnection(conninfo), run: 1)
        #expect(list.files.isEmpty)
        #expect(list.notices.count == 1, "\(list.notices) \(logged.withLock { $0 })")
        #expect(list.notices.first?.hasPrefix("attempt 1: no file kept: PostgreSQL could not take them (batond is stopping") == true, "\(list.notices)")
    }

    @Test("review E2 item 6: a stop's give-up tells the run at once while PostgreSQL does not answer; the notice is recorded once it does")
    func giveUpTellsFirst() async throws {
        var down = try await DownKeep()
        let (server, keeper, logged, conninfo) = (down.server, down.keeper, down.logged, down.conninfo)
        _ = try #require(await down.waiting.next())
        // The server is back but answers nothing (its postmaster stopped): a new connection waits.
        try server.start()
        let postmaster = try #require(pid_t(try String(contentsOfFile: server.directory + "/data/postmaster.pid", encoding: .utf8)
            .split(separator: "\n").first.map(String.init) ?? ""))
        kill(postmaster, SIGSTOP)
        defer { kill(postmaster, SIGCONT) }
        keeper.stopRetrying()
        // A deadline, not a speed: a run that waits for PostgreSQL waits for as long as it is
        // stopped. 30 s, the harness's usual wait (10 s raced the told run on a loaded machine).
        let told = await withTaskGroup(of: Bool.self) { group in
            group.addTask { [kept = down.kept] in
                await kept.value
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return false
            }
            let first = await group.next() ?? false
            kill(postmaster, SIGCONT)
            group.cancelAll()
            return first
        }
        #expect(told, "the run waited for PostgreSQL before it was told")
        keeper.close(timeout: .seconds(60))
        let list = try FleetArtifactRowsTests.list(try PGConnection(conninfo), run: 1)
        #expect(list.notices.first?.hasPrefix("attempt 1: no file kept: PostgreSQL could not take them (batond is stopping") == true,
                "\(list.notices) \(logged.withLock { $0 })")
    }

    @Test("review E2 item 6: a give-up is recorded only on a run still this incarnation's")
    func giveUpOwned() throws {
        let (_, db) = try FleetArtifactRowsTests.database()
        #expect(try FleetArtifactRows.recordGiveUp("attempt 1: no file kept", run: 1, attempt: 1, incarnation: FleetArtifactRowsTests.me.incarnation, on: db))
        try db.query("UPDATE runs SET incarnation = $1 WHERE id = 2", [FleetArtifactRowsTests.other.incarnation])
        #expect(try !FleetArtifactRows.recordGiveUp("attempt 1: no file kept", run: 2, attempt: 1, incarnation: FleetArtifactRowsTests.me.incarnation, on: db))
        #expect(try FleetArtifactRowsTests.list(db, run: 1).notices.count == 1)
        #expect(try FleetArtifactRowsTests.list(db, run: 2).notices.isEmpty)
    }

    @Test("the wait before each try: 1 s, doubling, at most 30 s")
    func backoff() {
        #expect((1...8).map(FleetArtifacts.backoff) == [1, 2, 4, 8, 16, 30, 30, 30].map { Duration.seconds($0) })
    }
}

/// A keep begun while PostgreSQL is down, the test its timer: each retry waits in `waiting` until the
/// test fires it. A keep that ends (kept, or given up) finishes the stream, so a keep not tried again
/// fails a test, never hangs it. Every test above starts so.
struct DownKeep {
    let server: Postgres
    let conninfo: String
    let keeper: FleetArtifacts
    let logged = Locked<[String]>([])
    let scan: ArtifactScan
    let kept: Task<Void, Never>
    var waiting: AsyncStream<@Sendable () -> Void>.Iterator
    private let done = Locked(false)
    private let directory = ScratchDirectory()

    /// Whether the keep has ended (the run told its files are done, or that none were kept).
    var ended: Bool { done.withLock { $0 } }

    init() async throws {
        server = try Postgres.own()
        (conninfo, _) = try FleetArtifactRowsTests.database(on: server)
        let scan = ArtifactScan.look(try ArtifactStoreFiles.directory(in: directory), bound: 10 << 20)
        self.scan = scan
        let (retries, retry) = AsyncStream<@Sendable () -> Void>.makeStream()
        let keeper = FleetArtifactRowsTests.keeper(conninfo, logged: logged, later: { _, body in retry.yield(body) })
        self.keeper = keeper
        try server.stop()
        // Off the pool, as the test that races it against a deadline runs: a `Task {}` queues on the
        // cooperative pool behind a run's synchronous tests (a minute at a full run's start), and
        // the deadline would measure that queue, not the keep.
        kept = Task(executorPreference: OffPoolThreads.shared) { [done] in
            await FleetArtifactRowsTests.keep(keeper, scan, run: 1)
            done.withLock { $0 = true }
            retry.finish()
        }
        waiting = retries.makeAsyncIterator()
    }
}
