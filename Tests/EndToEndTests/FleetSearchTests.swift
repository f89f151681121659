import BatonCore
@testable import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Issue 42, item 2 across a fleet: `baton search` answered from PostgreSQL's trigram index
/// (`pg_trgm`, Migrations/postgres/0024_output_search.sql), whichever host ran the runs, with the
/// answer one host gives; refused, naming pg_trgm, where the server has no such extension.
@Suite("End to end: baton search across a fleet", .serialized)
struct FleetSearchTests {
    static let actions = #"""
        fetch: { exec: ["sh", "-c", "echo starting; echo \"open /var/lib/baton/$BATON_PARAM_HOST/cache.db: Connection refused\"; exit 7"],
                 params: { host: { pattern: "^[a-z-]+$" } } },
        quiet: { exec: ["sh", "-c", "echo all fine café; printf '%s\\n' 'bytes \\ and 100%_done'"] },
        hidden: { exec: ["sh", "-c", "echo connection refused in secret"], allow: { read: { users: [] } } },
        """#

    @Test("a match across two hosts' runs, newest first with numbered lines; a substring of a path; --phase, --since and an action apply")
    func acrossHosts() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: Self.actions, conninfo: conninfo, settings: "requireUser: false,")
        let (a, b) = (hosts[0], hosts[1])
        #expect(try a.baton("run", "fetch", "-p", "host=db-east").code == 1)
        #expect(try b.baton("run", "quiet").code == 0)
        #expect(try b.baton("run", "fetch", "-p", "host=db-west").code == 1)
        for host in [a, b] {
            let found = try host.baton("search", "CONNECTION refused", "fetch")
            #expect(found.code == 0, "\(found)")
            let runs = found.stdout.split(separator: "\n").filter { $0.hasPrefix("run ") }.map { $0.split(separator: " ")[1] }
            #expect(runs == ["3", "1"], "\(found.stdout)")
            #expect(found.stdout.contains("  2: open /var/lib/baton/db-west/cache.db: Connection refused\n"), "\(found.stdout)")
        }
        // A substring of a path, in the middle of a word; the JSON answer as one host's.
        let json = try b.baton("search", "baton/db-ea", "--json")
        let matches = try JSONDecoder().decode([SearchMatch].self, from: Data(json.stdout.utf8))
        #expect(matches.map(\.run.id) == [1], "\(json)")
        #expect(matches.first?.lines == [MatchedLine(line: 2, text: "open /var/lib/baton/db-east/cache.db: Connection refused")])
        #expect(matches.first?.run.host == "web-1")
        // Param values are searched too, and LIKE's own characters and a backslash are plain text.
        let byParam = try JSONDecoder().decode([SearchMatch].self, from: Data(try a.baton("search", "db-west", "--json").stdout.utf8))
        #expect(byParam.map(\.run.id) == [3] && byParam.first?.params == ["host"], "\(byParam)")
        #expect(try a.baton("search", "100%_d").stdout.hasPrefix("run 2  quiet"))
        #expect(try a.baton("search", #"bytes \ and"#).stdout.hasPrefix("run 2  quiet"))
        #expect(try a.baton("search", "100%%d").stdout == "no runs match\n")
        // A text beyond ASCII: its bytes as the index's text has them (ASCII case still ignored).
        #expect(try a.baton("search", "FINE café").stdout.hasPrefix("run 2  quiet"))
        #expect(try a.baton("search", "connection refused", "--phase", "success").stdout == "no runs match\n")
        #expect(try a.baton("search", "all fine", "--phase", "success").stdout.hasPrefix("run 2  quiet"))
        // --since: run 1 queued ten days ago is out of the last week.
        let db = try PGConnection(conninfo)
        try db.query("UPDATE runs SET queued_at = queued_at - 864000000000 WHERE id = 1")
        let recent = try a.baton("search", "connection refused", "fetch", "--since", "7d")
        #expect(recent.stdout.split(separator: "\n").filter { $0.hasPrefix("run ") }.map { $0.split(separator: " ")[1] } == ["3"], "\(recent)")
    }

    @Test("rights: a user who may not read an action finds none of its runs; root finds them")
    func rights() throws {
        let hosts = try FleetTests.fleet(1, actions: Self.actions, settings: #"requireUser: false, socketMode: "0666","#)
        let host = hosts[0]
        chmod(host.directory, 0o755)
        #expect(try host.baton("run", "hidden").code == 0)
        #expect(try host.baton("run", "fetch", "-p", "host=db-east").code == 1)
        #expect(try host.baton("search", "in secret").stdout.hasPrefix("run 1  hidden"))
        let nobody = try AccessTests.batonAs("65534", group: "65534", host, "search", "connection refused", "--json")
        #expect(nobody.code == 0, "\(nobody)")
        let matches = try JSONDecoder().decode([SearchMatch].self, from: Data(nobody.stdout.utf8))
        #expect(matches.map(\.run.id) == [2], "\(nobody)")
        #expect(try AccessTests.batonAs("65534", group: "65534", host, "search", "in secret").stdout == "no runs match\n")
    }

    @Test("a server without pg_trgm: batond starts, and search is refused naming pg_trgm and how to add it")
    func withoutTrigrams() throws {
        let conninfo = try Postgres.server().database()
        let admin = try PGConnection(conninfo)
        let name = try #require(try admin.query("SELECT current_database()").first?[0] ?? nil)
        // The migration's own switch, for tests: it plays a server where CREATE EXTENSION fails.
        try admin.execute("ALTER DATABASE \(name) SET baton.test_without_pg_trgm = 'on'")
        let hosts = try FleetTests.fleet(1, actions: Self.actions, conninfo: conninfo, settings: "requireUser: false,")
        #expect(try hosts[0].baton("run", "quiet").code == 0)
        let refused = try hosts[0].baton("search", "all fine")
        #expect(refused.code == 2, "\(refused)")
        #expect(refused.stderr.contains("search on a fleet needs PostgreSQL's pg_trgm extension"), "\(refused)")
        #expect(refused.stderr.contains("CREATE EXTENSION pg_trgm"), "\(refused)")
        #expect(try PGConnection(conninfo).query("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'").first == nil)
    }

    @Test("a text under three characters (no trigram to narrow by) is looked for in the newest 100 runs only, and says where it stopped; three find the oldest")
    func shortText() throws {
        let (_, db) = try FleetArtifactRowsTests.database()
        try db.execute("""
            INSERT INTO keys (key) VALUES ('job');
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation)
                SELECT n, 'job', 'job', 'success', 'queue', n, 'web-1', 'x' FROM generate_series(3, 150) AS n;
            INSERT INTO output_chunks (run_id, start, stream, at, bytes)
                SELECT n, 0, 1, n, convert_to(CASE WHEN n = 3 THEN 'first zq here' || chr(10) ELSE 'plain' || chr(10) END, 'UTF8')
                FROM generate_series(3, 150) AS n;
            """)
        let short = try #require(try FleetSearch.search("zq", HistoryFilter(limit: 20), on: db))
        #expect(short.matches.isEmpty)
        #expect(short.cut == SearchCut(scannedBytes: 600, run: 51), "\(String(describing: short.cut))")
        let whole = try #require(try FleetSearch.search("ZQ here", HistoryFilter(limit: 20), on: db))
        #expect(whole.matches.map(\.run.id) == [3] && whole.cut == nil)
        #expect(whole.matches.first?.lines == [MatchedLine(line: 1, text: "first zq here")])
        // The newest runs hold it: found there, nothing cut.
        let plain = try #require(try FleetSearch.search("ai", HistoryFilter(limit: 5), on: db))
        #expect(plain.matches.map(\.run.id) == [150, 149, 148, 147, 146] && plain.cut == nil)
    }

    @Test("the ILIKE pattern over encode(bytes, 'escape'): LIKE's characters escaped, high bytes and backslashes as the encoding writes them")
    func pattern() {
        #expect(FleetSearch.pattern("a%b_c") == #"%a\%b\_c%"#)
        #expect(FleetSearch.pattern(#"x\y"#) == #"%x\\\\y%"#)
        #expect(FleetSearch.pattern("é") == #"%\\303\\251%"#)
    }
}
