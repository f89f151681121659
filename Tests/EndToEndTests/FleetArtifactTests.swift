import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Issue 42, item 4 across a fleet: a run's files, kept in PostgreSQL by the host that ran it,
/// served by any host under the same access rules.
@Suite("End to end: artifacts across the fleet", .serialized, .offPool)
struct FleetArtifactTests {
    /// 2.5 MB of random bytes (three chunks) and a nested text file; the run prints their digests.
    static let make = #"""
        make: { exec: ["sh", "-c", "cd \"$BATON_ARTIFACTS\" && head -c 2500000 /dev/urandom > big.bin && mkdir d && echo hi > d/a.txt && sha256sum big.bin d/a.txt"],
                artifacts: { keep: "10MiB" } },
        """#

    @Test("a run on web-1 keeps its files; on web-2, `baton artifacts` lists them and `baton artifacts RUN NAME -o F` writes the same bytes (sha256)")
    func servedByAnotherHost() throws {
        let hosts = try FleetTests.fleet(2, actions: Self.make)
        let (a, b) = (hosts[0], hosts[1])
        let run = try #require(try FleetTests.trigger(a, "make").run?.id)
        #expect(try FleetTests.wait(a, run: run)?.phase == .success, "\(a.stderr.suffix(1500))")
        // What the run itself saw of its files: "DIGEST  NAME" lines.
        let printed = try a.baton("logs", String(run)).stdout
        let digests = Dictionary(uniqueKeysWithValues: printed.split(separator: "\n").map { line in
            (String(line.split(separator: " ").last ?? ""), String(line.prefix(64)))
        })
        #expect(digests.count == 2, "\(printed)")

        let listed = try b.baton("artifacts", String(run))
        #expect(listed.code == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("big.bin") && listed.stdout.contains("d/a.txt"), "\(listed.stdout)")
        #expect(listed.stdout.contains(try #require(digests["big.bin"])), "\(listed.stdout)")
        let file = b.directory + "/big.out"
        let fetched = try b.baton("artifacts", String(run), "big.bin", "-o", file)
        #expect(fetched.code == 0, "\(fetched.stderr)")
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(bytes.count == 2_500_000)
        #expect(try ArtifactStoreFiles.sha256sum(bytes) == digests["big.bin"])
        #expect(try b.baton("artifacts", String(run), "d/a.txt").stdout == "hi\n")
        let show = try b.baton("show", String(run))
        #expect(show.stdout.contains("artifacts:") && show.stdout.contains("big.bin"), "\(show.stdout)")
        // The same from the host that ran it; its attempt's directory is gone.
        #expect(try a.baton("artifacts", String(run)).stdout == listed.stdout)
        #expect(!FileManager.default.fileExists(atPath: a.database + "-artifacts-web-1/\(run)-1"))
        // Nothing left unpublished once the keep is done.
        let db = try PGConnection(try #require(try Self.conninfo(of: a)))
        #expect(try db.query("SELECT count(*) FROM artifacts WHERE NOT kept").first?[0] == "0")
        #expect(try db.query("SELECT count(*) FROM artifact_chunks").first?[0] == "4")
    }

    @Test("web-1 killed with SIGKILL while it writes a run's chunks: the run ends host_lost with no files, and web-2's next keep sweeps what web-1 began")
    func crashMidKeep() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: #"""
            big: { exec: ["sh", "-c", "head -c 100000000 /dev/urandom > \"$BATON_ARTIFACTS/big.bin\""], artifacts: { keep: "200MiB" } },
            small: { exec: ["sh", "-c", "echo hi > \"$BATON_ARTIFACTS/a.txt\""], artifacts: { keep: "1KiB" } },
            """#, lease: "2s", conninfo: conninfo)
        let (a, b) = (hosts[0], hosts[1])
        let db = try PGConnection(conninfo)
        let run = try #require(try FleetTests.trigger(a, "big").run?.id)
        // Kill web-1 once it has begun the rows and written a few of the hundred chunks.
        try Eventually.until("web-1's keep seen under way (3 chunks of an unkept artifact)") {
            try db.query("""
                SELECT count(*) FROM artifacts a JOIN artifact_chunks c ON c.artifact_id = a.id WHERE a.run_id = $1 AND NOT a.kept
                """, [String(run)]).first?[0].flatMap { Int($0) }.map { $0 >= 3 } ?? false
        }
        a.crash()
        let ended = try FleetTests.wait(b, run: run)
        #expect(ended?.phase == .failure && ended?.reason == "host_lost", "\(String(describing: ended))")
        // Nothing published; what web-1 began is still there until a keeper sweeps it.
        #expect(try b.baton("artifacts", String(run)).stdout.contains("big.bin") == false)
        #expect(try db.query("SELECT count(*) FROM artifacts WHERE kept").first?[0] == "0")
        #expect(try db.query("SELECT count(*) FROM artifacts WHERE NOT kept").first?[0] == "1")
        // web-2's next keep sweeps the gone host's rows first, then keeps its own run's file.
        let next = try #require(try FleetTests.trigger(b, "small").run?.id)
        #expect(try FleetTests.wait(b, run: next)?.phase == .success)
        #expect(try db.query("SELECT count(*) FROM artifacts WHERE NOT kept").first?[0] == "0")
        #expect(try db.query("SELECT count(*) FROM artifact_chunks").first?[0] == "1")
        #expect(try b.baton("artifacts", String(next), "a.txt").stdout == "hi\n")
    }

    @Test("web-2, which does not define the run's action, refuses its artifacts (its access rules unknown there); web-1 serves them")
    func refusedWhereNotConfigured() throws {
        let conninfo = try Postgres.server().database()
        let a = try FleetTests.fleet(1, actions: Self.make, conninfo: conninfo)[0]
        let b = try Daemon(config: """
            { postgres: "\(conninfo)", host: "web-2", lease: "15s", actions: { other: { exec: ["true"] } } }
            """)
        try b.waitForLog("joined the fleet")
        let run = try #require(try FleetTests.trigger(a, "make").run?.id)
        #expect(try FleetTests.wait(a, run: run)?.phase == .success, "\(a.stderr.suffix(1500))")
        #expect(try a.baton("artifacts", String(run)).code == 0)
        for refused in [try b.baton("artifacts", String(run)), try b.baton("artifacts", String(run), "d/a.txt")] {
            #expect(refused.code != 0 && refused.stdout.isEmpty, "\(refused.stdout)")
            #expect(refused.stderr.contains("\"make\" is not configured on this host"), "\(refused.stderr)")
        }
    }

    @Test("two hosts on one machine with the same --database: web-2's start leaves web-1's live $BATON_ARTIFACTS alone")
    func sameDatabaseTwoHosts() throws {
        let conninfo = try Postgres.server().database()
        let gate = try FifoGate()
        let held = """
            held: { exec: ["sh", "-c", "echo hi > \\"$BATON_ARTIFACTS/a.txt\\" && cat \\"$GATE\\" > /dev/null"],
                    env: { GATE: "\(gate.path)" }, artifacts: { keep: "1KiB" } },
            """
        let a = try FleetTests.fleet(1, actions: held, conninfo: conninfo)[0]
        let run = try #require(try FleetTests.trigger(a, "held").run?.id)
        let live = a.database + "-artifacts-web-1/\(run)-1/a.txt"
        guard Eventually.until("the run wrote its file", within: 30, { FileManager.default.fileExists(atPath: live) }) else { return }
        let b = try Daemon(config: """
            { postgres: "\(conninfo)", host: "web-2", lease: "15s", actions: { \(held) } }
            """, database: a.database)
        try b.waitForLog("joined the fleet")
        #expect(FileManager.default.fileExists(atPath: live), "web-2's start removed web-1's live directory")
        gate.release()
        #expect(try FleetTests.wait(a, run: run)?.phase == .success)
        #expect(try b.baton("artifacts", String(run), "a.txt").stdout == "hi\n")
    }

    @Test("a host without an `artifacts` action opens no keeper connection and sweeps nothing; one with such an action sweeps a gone host's rows")
    func sweepOnlyWithArtifacts() throws {
        let (conninfo, db) = try FleetArtifactRowsTests.database()
        try db.query("UPDATE hosts SET gone_at = now() WHERE incarnation = $1", [FleetArtifactRowsTests.me.incarnation])
        try db.query("""
            INSERT INTO artifacts (run_id, attempt, name, size, sha256, type, at, incarnation)
            VALUES (1, 1, 'left.txt', 0, '', 'text/plain', 0, $1)
            """, [FleetArtifactRowsTests.me.incarnation])
        func left() throws -> String? { try db.query("SELECT count(*) FROM artifacts").first?[0] }
        let plain = try Daemon(config: """
            { postgres: "\(conninfo)", host: "web-3", lease: "15s", actions: { plain: { exec: ["true"] } } }
            """)
        // It says it does not sweep (where it would have begun its sweep), then has joined.
        try plain.waitForLog("no action keeps artifacts: no artifact sweep at start")
        try plain.waitForLog("joined the fleet")
        #expect(try left() == "1", "a host with no artifacts action swept")
        let keeping = try Daemon(config: """
            { postgres: "\(conninfo)", host: "web-4", lease: "15s", actions: { \(Self.make) } }
            """)
        try keeping.waitForLog("joined the fleet")
        try Eventually.value("web-4 swept the gone host's row", within: 30, { try left() }) { $0 == "0" }
    }

    /// The `postgres` string of a host's config (the test's database).
    static func conninfo(of host: Daemon) throws -> String? {
        let config = try String(contentsOfFile: host.configPath, encoding: .utf8)
        guard let start = config.range(of: "postgres: \"")?.upperBound, let end = config[start...].firstIndex(of: "\"") else { return nil }
        return String(config[start..<end])
    }
}
