import BatonCore
@testable import BatonFleet
import Foundation
import Testing

/// The fleet's keeper of artifacts against a real PostgreSQL (issue 42, item 4): kept and read
/// back (sizes, types, SHA-256 against `sha256sum`, pieces across 1 MiB chunks), over the bound,
/// replaced by a later attempt, what a crash leaves and who removes it, a host whose run was taken
/// over, and retention.
@Suite("End to end: the fleet's artifacts, as rows", .offPool)
struct FleetArtifactRowsTests {
    static let me = FleetHost(name: "web-1", incarnation: "web-1/1/aa", lease: .seconds(15))
    static let other = FleetHost(name: "web-2", incarnation: "web-2/2/bb", lease: .seconds(15))

    /// A migrated database, both hosts live, and runs 1 and 2 of `build` loading on web-1.
    static func database(on server: Postgres? = nil) throws -> (conninfo: String, db: PGConnection) {
        let conninfo = try (server ?? Postgres.server()).database()
        let db = try PGConnection(conninfo)
        _ = try FleetSchema.migrate(db)
        for host in [me, other] {
            try db.query("INSERT INTO hosts (incarnation, name, pid, lease_ms) VALUES ($1, $2, 1, 15000)", [host.incarnation, host.name])
        }
        try db.execute("""
            INSERT INTO keys (key) VALUES ('build n=1'), ('build n=2');
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation)
                SELECT n, 'build', 'build n=' || n, 'loading', 'queue', 0, 'web-1', '\(me.incarnation)' FROM generate_series(1, 2) AS n
            """)
        return (conninfo, db)
    }

    static func keeper(_ conninfo: String, as host: FleetHost = me, logged: Locked<[String]>? = nil,
                       afterChunk: (@Sendable (Int) -> Void)? = nil, later: FleetArtifacts.Later? = nil) -> FleetArtifacts {
        let (pool, log): (PGPool, @Sendable (String) -> Void) = (PGPool(conninfo: conninfo, defaults: [:]), { line in logged?.withLock { $0.append(line) } })
        guard let later else { return FleetArtifacts(pool: pool, host: host, log: log, afterChunk: afterChunk) }
        return FleetArtifacts(pool: pool, host: host, log: log, afterChunk: afterChunk, reactor: Reactor(), later: later)
    }

    static func keep(_ keeper: FleetArtifacts, _ scan: ArtifactScan, run: Int64, attempt: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            keeper.keep(scan, run: run, attempt: attempt) { continuation.resume() }
        }
    }

    static func list(_ db: PGConnection, run: Int64) throws -> ArtifactList { try FleetArtifactRows.list(run, on: db) }

    /// The whole file, read back as a client does: piece after piece.
    static func readBack(_ db: PGConnection, run: Int64, name: String, pieceBytes: Int) throws -> [UInt8] {
        var bytes: [UInt8] = [], from: Int64 = 0
        while let piece = try FleetArtifactRows.piece(run, named: name, from: from, maxBytes: pieceBytes, on: db) {
            #expect(piece.from == from)
            #expect(piece.bytes.count <= pieceBytes)
            bytes += piece.bytes
            guard let next = piece.next else { break }
            from = next
        }
        return bytes
    }

    static func count(_ db: PGConnection, _ sql: String) throws -> Int { Int(try db.query(sql).first?[0] ?? "") ?? -1 }

    static func chunks(_ db: PGConnection) throws -> Int { try count(db, "SELECT count(*) FROM artifact_chunks") }

    @Test("files kept, nested paths kept, links named not followed; read back byte-exact on another connection, digests as sha256sum's")
    func kept() async throws {
        let (conninfo, db) = try Self.database()
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let scan = ArtifactScan.look(try ArtifactStoreFiles.directory(in: dir), bound: 10 << 20)
        await Self.keep(Self.keeper(conninfo), scan, run: 1)

        let list = try Self.list(db, run: 1)
        #expect(list.files.map(\.name) == ["a.txt", "sub/deep/b.bin"])
        #expect(list.files.map(\.size) == [3, Int64(ArtifactStoreFiles.binary.count)])
        #expect(list.files.map(\.type) == ["text/plain; charset=utf-8", "application/octet-stream"])
        #expect(list.files[0].sha256 == (try ArtifactStoreFiles.sha256sum(Array("hi\n".utf8))))
        #expect(list.files[1].sha256 == (try ArtifactStoreFiles.sha256sum(ArtifactStoreFiles.binary)))
        #expect(list.notices == ["link: a symlink, not followed"])
        // Pieces that cut the 1 MiB chunks anywhere, whole chunks, and a byte at a time.
        #expect(try Self.readBack(db, run: 1, name: "sub/deep/b.bin", pieceBytes: 700_001) == ArtifactStoreFiles.binary)
        #expect(try Self.readBack(db, run: 1, name: "sub/deep/b.bin", pieceBytes: ArtifactPiece.maxBytes) == ArtifactStoreFiles.binary)
        #expect(try Self.readBack(db, run: 1, name: "a.txt", pieceBytes: 1) == Array("hi\n".utf8))
        let late = try #require(try FleetArtifactRows.piece(1, named: "a.txt", from: 99, maxBytes: 10, on: db))
        #expect(late.from == 3 && late.bytes.isEmpty && late.next == nil)
        #expect(try FleetArtifactRows.piece(1, named: "nope", from: 0, maxBytes: 10, on: db) == nil)
        #expect(try Self.list(db, run: 2) == ArtifactList(run: 2))
        #expect(try Self.chunks(db) == 5)
        #expect(try Self.count(db, "SELECT count(*) FROM artifacts WHERE NOT kept") == 0)
    }

    @Test("over the bound, none is kept and the run says how much there was")
    func overTheBound() async throws {
        let (conninfo, db) = try Self.database()
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let scan = ArtifactScan.look(try ArtifactStoreFiles.directory(in: dir), bound: 1 << 20)
        #expect(scan.files.isEmpty)
        await Self.keep(Self.keeper(conninfo), scan, run: 1)
        let list = try Self.list(db, run: 1)
        #expect(list.files.isEmpty)
        #expect(list.notices == ["link: a symlink, not followed", "artifacts over 1 MiB: 3.1 MiB, none kept"])
        #expect(try Self.chunks(db) == 0)
    }

    @Test("a later attempt's files replace an earlier attempt's, chunks and notices included")
    func replaced() async throws {
        let (conninfo, db) = try Self.database()
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let keeper = Self.keeper(conninfo)
        await Self.keep(keeper, ArtifactScan.look(try ArtifactStoreFiles.directory(in: dir), bound: 10 << 20), run: 1, attempt: 1)
        let second = dir.file("second")
        try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
        try Data("two".utf8).write(to: URL(fileURLWithPath: second + "/c.json"))
        await Self.keep(keeper, ArtifactScan.look(second, bound: 10 << 20), run: 1, attempt: 2)
        let list = try Self.list(db, run: 1)
        #expect(list.files.map(\.name) == ["c.json"])
        #expect(list.files.map(\.attempt) == [2])
        #expect(list.files.map(\.type) == ["application/json"])
        #expect(list.notices.isEmpty)
        #expect(try Self.readBack(db, run: 1, name: "c.json", pieceBytes: 100) == Array("two".utf8))
        #expect(try Self.chunks(db) == 1)
        #expect(try Self.count(db, "SELECT count(*) FROM artifacts") == 1)
    }

    @Test("what a crash leaves unpublished is never read; a gone host's is swept by any host's keeper, a live host's never")
    func crashLeftovers() async throws {
        let (conninfo, db) = try Self.database()
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let first = dir.file("first")
        try FileManager.default.createDirectory(atPath: first, withIntermediateDirectories: true)
        try Data("one".utf8).write(to: URL(fileURLWithPath: first + "/a.txt"))
        await Self.keep(Self.keeper(conninfo), ArtifactScan.look(first, bound: 10 << 20), run: 1, attempt: 1)
        // Attempt 2 of run 1 begun by web-1 and two chunks written, then web-1 dies; and web-2,
        // alive, in the middle of run 2's keep (run 2 is its now).
        let scan = ArtifactScan.look(try ArtifactStoreFiles.directory(in: dir), bound: 10 << 20)
        let crashed = try #require(try FleetArtifactRows.begin(scan.files, run: 1, attempt: 2, at: .now, incarnation: Self.me.incarnation, on: db))
        try FleetArtifactRows.writeChunk(Array("hi\n".utf8), of: crashed[0], at: 0, on: db)
        try FleetArtifactRows.writeChunk(Array(ArtifactStoreFiles.binary.prefix(1 << 20)), of: crashed[1], at: 0, on: db)
        try db.query("UPDATE runs SET incarnation = $1, host = 'web-2' WHERE id = 2", [Self.other.incarnation])
        let live = try #require(try FleetArtifactRows.begin(scan.files, run: 2, attempt: 1, at: .now, incarnation: Self.other.incarnation, on: db))
        try FleetArtifactRows.writeChunk(Array("hi\n".utf8), of: live[0], at: 0, on: db)
        #expect(try Self.chunks(db) == 4)

        // Nothing unpublished is read: run 1 still shows attempt 1's file, run 2 none.
        #expect(try Self.list(db, run: 1).files.map(\.attempt) == [1])
        #expect(try Self.readBack(db, run: 1, name: "a.txt", pieceBytes: 100) == Array("one".utf8))
        #expect(try FleetArtifactRows.piece(1, named: "sub/deep/b.bin", from: 0, maxBytes: 10, on: db) == nil)
        #expect(try Self.list(db, run: 2) == ArtifactList(run: 2))

        // While web-1 is not known gone, nobody else removes its rows (a live host may be slow).
        let third = FleetHost(name: "web-3", incarnation: "web-3/3/cc", lease: .seconds(15))
        #expect(try FleetArtifactRows.sweep(third.incarnation, on: db) == 0)
        // The takeover marks web-1 gone: now any host's keeper sweeps its rows, never web-2's (alive, writing).
        try db.query("UPDATE hosts SET gone_at = now() WHERE incarnation = $1", [Self.me.incarnation])
        let swept = Self.keeper(conninfo, as: third)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in swept.sweep { continuation.resume() } }
        #expect(try Self.count(db, "SELECT count(*) FROM artifacts WHERE NOT kept AND incarnation = '\(Self.me.incarnation)'") == 0)
        #expect(try Self.count(db, "SELECT count(*) FROM artifacts WHERE NOT kept AND incarnation = '\(Self.other.incarnation)'") == 2)
        #expect(try Self.chunks(db) == 2, "attempt 1's chunk and web-2's")
        #expect(try Self.list(db, run: 1).files.map(\.name) == ["a.txt"])
        // web-2's keep goes on and publishes.
        try FleetArtifactRows.writeChunk(ArtifactStoreFiles.binary, of: live[1], at: 0, on: db)
        let published = try FleetArtifactRows.publish([
            .init(id: live[0], size: 3, sha256: try ArtifactStoreFiles.sha256sum(Array("hi\n".utf8))),
            .init(id: live[1], size: Int64(ArtifactStoreFiles.binary.count), sha256: try ArtifactStoreFiles.sha256sum(ArtifactStoreFiles.binary)),
        ], notices: [], run: 2, attempt: 1, incarnation: Self.other.incarnation, on: db)
        #expect(published != nil)
        #expect(try Self.list(db, run: 2).files.map(\.name) == ["a.txt", "sub/deep/b.bin"])
    }

    @Test("a host whose run was taken over while it wrote the files publishes none of them, and leaves none behind")
    func takenOver() async throws {
        let (conninfo, db) = try Self.database()
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let logged = Locked<[String]>([])
        // After web-1 wrote its second chunk, web-2 takes run 1 over (as a restart after a lost lease does).
        let keeper = Self.keeper(conninfo, logged: logged) { chunks in
            guard chunks == 2 else { return }
            _ = try? PGConnection(conninfo).query("UPDATE runs SET incarnation = $1, host = 'web-2', phase = 'queued' WHERE id = 1", [Self.other.incarnation])
        }
        await Self.keep(keeper, ArtifactScan.look(try ArtifactStoreFiles.directory(in: dir), bound: 10 << 20), run: 1)
        #expect(try Self.list(db, run: 1) == ArtifactList(run: 1))
        #expect(try Self.count(db, "SELECT count(*) FROM artifacts") == 0)
        #expect(try Self.chunks(db) == 0)
        #expect(logged.withLock { $0 }.contains { $0.contains("run 1 was taken over") }, "\(logged.withLock { $0 })")
        // Run 2 is still web-1's, but web-1 is marked gone: refused too, before a byte is written.
        try db.query("UPDATE hosts SET gone_at = now() WHERE incarnation = $1", [Self.me.incarnation])
        await Self.keep(keeper, ArtifactScan.look(dir.file("work"), bound: 10 << 20), run: 2)
        #expect(try Self.list(db, run: 2) == ArtifactList(run: 2))
        #expect(try Self.count(db, "SELECT count(*) FROM artifacts") == 0)
        #expect(logged.withLock { $0 }.contains { $0.contains("run 2 is no longer this host's") })
    }

    @Test("a takeover in flight when the keep publishes: the publication waits for its commit on the run's row, then finds the run not its own")
    func takeoverRacesPublication() async throws {
        let (conninfo, _) = try Self.database()
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let scan = ArtifactScan.look(try ArtifactStoreFiles.directory(in: dir), bound: 10 << 20)
        let logged = Locked<[String]>([])
        // Another host's takeover of run 1, on a connection of its own. Whatever the order, its
        // transaction ends: the server ends its session after 120 s idle in one, and the lock with it.
        let takeover = Unchecked(try PGConnection(conninfo)), watch = Unchecked(try PGConnection(conninfo))
        try takeover.value.execute("SET idle_in_transaction_session_timeout = 120000; SET lock_timeout = 60000")
        let takeoverPID = try #require(try takeover.value.query("SELECT pg_backend_pid()").first?[0])
        let race = Locked<TakeoverRace>(TakeoverRace())
        let ended = DispatchSemaphore(value: 0), settled = DispatchSemaphore(value: 0)
        // After the last chunk (a.txt's one and b.bin's four), on the keeper's thread, before its
        // publication: the takeover updates the run's row and holds it. A thread of the test's own
        // commits it once the publication waits for that row (at most 60 s: it commits regardless).
        let keeper = Self.keeper(conninfo, logged: logged) { chunks in
            guard chunks == 5 else { return }
            do {
                try takeover.value.execute("BEGIN")
                try takeover.value.query("UPDATE runs SET incarnation = $1, host = 'web-2', phase = 'queued' WHERE id = 1", [Self.other.incarnation])
            } catch {
                _ = try? takeover.value.execute("ROLLBACK")
                return race.withLock { $0.problems.append("the takeover's update: \(error)") }
            }
            race.withLock { $0.begun = true }
            Thread {
                // What it saw is written before the COMMIT: the keeper may wake (and the test read
                // `race`) as soon as the row's lock goes, before this thread reads the reply.
                let blocked = Result { try Eventually.held(within: 60) {
                    try Self.count(watch.value, "SELECT count(*) FROM pg_stat_activity WHERE \(takeoverPID) = ANY(pg_blocking_pids(pid))") > 0
                } }
                race.withLock {
                    $0.publicationWaited = (try? blocked.get()) ?? false
                    if case let .failure(error) = blocked { $0.problems.append("watching for the blocked publication: \(error)") }
                }
                let committed = Result { try takeover.value.execute("COMMIT") }
                if case let .failure(error) = committed { race.withLock { $0.problems.append("the takeover's commit: \(error)") } }
                settled.signal()
            }.start()
        }
        keeper.keep(scan, run: 1, attempt: 1) { ended.signal() }
        guard await Self.signalled(ended, within: 180) else {
            Issue.record("the keep did not end within 180 s: \(race.withLock { $0 }), \(logged.withLock { $0 })")
            return
        }
        if race.withLock({ $0.begun }), !(await Self.signalled(settled, within: 90)) {
            Issue.record("the takeover's thread did not commit within 90 s of the keep's end")
        }
        let db = try PGConnection(conninfo)
        let seen = race.withLock { $0 }
        #expect(seen.problems.isEmpty, "\(seen.problems)")
        #expect(seen.publicationWaited, "the publication waited for the takeover's row lock")
        #expect(try Self.list(db, run: 1) == ArtifactList(run: 1))
        #expect(try Self.count(db, "SELECT count(*) FROM artifacts") == 0)
        #expect(try Self.chunks(db) == 0)
        #expect(logged.withLock { $0 }.contains { $0.contains("run 1 was taken over") }, "\(logged.withLock { $0 })")
    }

    /// What the takeover's threads saw, for the test to report.
    struct TakeoverRace: Sendable {
        var begun = false
        var publicationWaited = false
        var problems: [String] = []
    }

    /// Waits for `semaphore` on a thread of its own (`onThread`: none of the cooperative pool's,
    /// which a synchronous suite may hold), at most `seconds`: whether it was signalled.
    static func signalled(_ semaphore: DispatchSemaphore, within seconds: Double) async -> Bool {
        (try? await onThread { semaphore.wait(timeout: .now() + seconds) == .success }) ?? false
    }

    @Test("a keep after the server restarted (the keeper's connection broken meanwhile) is made on a new connection, not lost")
    func afterServerRestart() async throws {
        let server = try Postgres.own()
        let (conninfo, _) = try Self.database(on: server)
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let scan = ArtifactScan.look(try ArtifactStoreFiles.directory(in: dir), bound: 10 << 20)
        let logged = Locked<[String]>([])
        let keeper = Self.keeper(conninfo, logged: logged)
        await Self.keep(keeper, scan, run: 1)
        try server.stop()
        try server.start()
        await Self.keep(keeper, scan, run: 2)
        let db = try PGConnection(conninfo)
        #expect(try Self.list(db, run: 2).files.map(\.name) == ["a.txt", "sub/deep/b.bin"], "\(logged.withLock { $0 })")
        #expect(try Self.readBack(db, run: 2, name: "sub/deep/b.bin", pieceBytes: ArtifactPiece.maxBytes) == ArtifactStoreFiles.binary)
        #expect(try Self.count(db, "SELECT count(*) FROM artifacts WHERE NOT kept") == 0)
    }

    @Test("retention removes a run's artifacts with it, every chunk and notice; prune on the fleet's store; a dry run counts their bytes")
    func pruned() async throws {
        let (conninfo, db) = try Self.database()
        let keeper = Self.keeper(conninfo)
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let root = try ArtifactStoreFiles.directory(in: dir)
        await Self.keep(keeper, ArtifactScan.look(root, bound: 10 << 20), run: 1)
        await Self.keep(keeper, ArtifactScan.look(root, bound: 10 << 20), run: 2)
        #expect(try Self.chunks(db) == 10)
        let day: Int64 = 86_400_000_000, now = Timestamp.now.rawValue
        try db.query("UPDATE runs SET phase = 'success', started_at = $1, ended_at = $1 WHERE id = 1", [String(now - 100 * day)])
        try db.query("UPDATE runs SET phase = 'success', started_at = $1, ended_at = $1 WHERE id = 2", [String(now - day)])
        let store = FleetStore(pool: PGPool(conninfo: conninfo, defaults: [:]), host: Self.me, reactor: Reactor(), onProblem: { _ in }, onLost: { _ in })
        defer { _ = store.close() }
        let retention = Retention(maxAge: .seconds(30 * 86_400), keepFailures: .seconds(365 * 86_400), maxRunsPerAction: 100)
        // A dry run counts the artifacts' bytes that would go: run 1's two files only.
        let dry = try await store.prune(retention: retention, overrides: [:], dryRun: true)
        #expect(dry.removed == ["build": 1])
        #expect(dry.artifactBytes == Int64("hi\n".utf8.count + ArtifactStoreFiles.binary.count))
        #expect(try Self.chunks(db) == 10)
        let report = try await store.prune(retention: retention, overrides: [:], dryRun: false)
        #expect(report.removed == ["build": 1])
        #expect(try await store.artifacts(of: 1) == ArtifactList(run: 1))
        #expect(try await store.artifacts(of: 2).files.count == 2)
        #expect(try Self.count(db, "SELECT count(*) FROM artifacts") == 2)
        #expect(try Self.chunks(db) == 5)
        #expect(try Self.count(db, "SELECT count(*) FROM artifact_notices") == 1)
    }
}

/// The files the SQLite keeper's tests keep, for the fleet's (the same bytes, the same checks).
enum ArtifactStoreFiles {
    /// 3 MiB and a bit of bytes no compressor or run-length trick makes equal by chance.
    static let binary: [UInt8] = {
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        return (0..<(3 << 20) + 12_345).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }()

    /// A run's directory: a text file, a nested binary one, a symlink out and an empty directory.
    static func directory(in dir: ScratchDirectory) throws -> String {
        let root = dir.file("work")
        try FileManager.default.createDirectory(atPath: root + "/sub/deep", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/empty", withIntermediateDirectories: true)
        try Data("hi\n".utf8).write(to: URL(fileURLWithPath: root + "/a.txt"))
        try Data(binary).write(to: URL(fileURLWithPath: root + "/sub/deep/b.bin"))
        try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: "/etc/passwd")
        return root
    }

    /// `sha256sum`'s digest of `bytes`: a check that does not go through the code under test.
    static func sha256sum(_ bytes: [UInt8]) throws -> String {
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        try Data(bytes).write(to: URL(fileURLWithPath: dir.file("f")))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [dir.file("f")]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(String(decoding: out, as: UTF8.self).prefix(64))
    }
}

/// A value handed to another thread by a test that uses it from one thread at a time.
final class Unchecked<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
