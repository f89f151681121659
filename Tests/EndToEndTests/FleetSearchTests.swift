import BatonCore
@testable import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Issue 42, item 2 across a fleet: `baton search` answered from PostgreSQL's trigram index
/// (`pg_trgm`, Migrations/postgres/0024_output_search.sql), whichever host ran the runs, with the
/// answer one host gives; refused, naming pg_trgm, where the server has no such extension.
@Suite("End to end: baton search across a fleet", .serialized, .offPool)
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

    @Test("a server without pg_trgm: batond starts, search reads the newest output; search: \"index\" says what is missing")
    func withoutTrigrams() throws {
        let conninfo = try Postgres.server().database()
        let admin = try PGConnection(conninfo)
        let name = try #require(try admin.query("SELECT current_database()").first?[0] ?? nil)
        // The migration's own switch, for tests: it plays a server where pg_trgm is not installed.
        try admin.execute("ALTER DATABASE \(name) SET baton.test_without_pg_trgm = 'on'")
        let hosts = try FleetTests.fleet(1, actions: Self.actions, conninfo: conninfo, settings: #"requireUser: false, search: "index","#)
        #expect(try hosts[0].baton("run", "quiet").code == 0)
        #expect(try hosts[0].baton("search", "all fine").stdout.hasPrefix("run 1  quiet"))
        #expect(try PGConnection(conninfo).query("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'").first == nil)
        let db = try PGConnection(conninfo)
        #expect(try FleetSearch.makeIndex(on: db) == .impossible(try FleetSearch.missing(on: db)))
        #expect(try FleetSearch.missing(on: db).contains("CREATE EXTENSION pg_trgm"))
        #expect(try !FleetSearch.isIndexed(on: db))
    }

    @Test("search: \"index\" makes the index at a host's start; without it the migration makes none (the extension only), and search reads the output")
    func indexAtStart() throws {
        let conninfo = try Postgres.server().database()
        let plain = try FleetTests.fleet(1, actions: Self.actions, conninfo: conninfo, settings: "requireUser: false,")
        #expect(try plain[0].baton("run", "quiet").code == 0)
        let db = try PGConnection(conninfo)
        #expect(try !FleetSearch.isIndexed(on: db))
        #expect(try db.query("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'").first != nil)
        #expect(try plain[0].baton("search", "all fine").stdout.hasPrefix("run 1  quiet"))

        let other = try Postgres.server().database()
        let indexed = try FleetTests.fleet(1, actions: Self.actions, conninfo: other, settings: #"requireUser: false, search: "index","#)
        #expect(try indexed[0].baton("run", "quiet").code == 0)
        let made = try PGConnection(other)
        // Made after joining, beside the host's work: waited for here (a test's poll, 10 s at most).
        try Eventually.until("the host with search: \"index\" made the index", within: 30) { try FleetSearch.isIndexed(on: made) }
        #expect(try FleetSearch.makeIndex(on: made) == .present)
        #expect(try indexed[0].baton("search", "all fine").stdout.hasPrefix("run 1  quiet"))
    }

    @Test("a text under three characters, or any without the index, is looked for in the newest output up to a budget, saying where it stopped; with the index three find the oldest")
    func shortText() throws {
        let db = try Self.jobRuns(through: 150, output: "convert_to(CASE WHEN n = 3 THEN 'first zq here' || chr(10) ELSE 'plain' || chr(10) END, 'UTF8')")
        // Without the index: read the newest runs, at most 100 and what is left of the budget at a time (83 runs, then
        // one); past the budget it stops and says where.
        let scanned = try FleetSearch.search("ZQ here", HistoryFilter(limit: 20), budget: 500, on: db)
        #expect(scanned.matches.isEmpty && scanned.cut == SearchCut(scannedBytes: 504, run: 67), "\(scanned)")
        #expect(try FleetSearch.search("ZQ here", HistoryFilter(limit: 20), on: db).matches.map(\.run.id) == [3])
        #expect(try FleetSearch.makeIndex(on: db) == .made)
        // Past the cut the older runs' params are still asked (run 1's), as one host's scan asks them.
        try db.query("UPDATE runs SET params = $1 WHERE id = 1", [#"{"host":"zq-east"}"#])
        let short = try FleetSearch.search("zq", HistoryFilter(limit: 20), budget: 500, on: db)
        #expect(short.matches.map(\.run.id) == [1] && short.matches.first?.params == ["host"], "\(short)")
        #expect(short.cut == SearchCut(scannedBytes: 504, run: 67), "\(String(describing: short.cut))")
        let whole = try FleetSearch.search("ZQ here", HistoryFilter(limit: 20), budget: 500, on: db)
        #expect(whole.matches.map(\.run.id) == [3] && whole.cut == nil)
        #expect(whole.matches.first?.lines == [MatchedLine(line: 1, text: "first zq here")])
        // The newest runs hold it: found there, nothing cut.
        let plain = try FleetSearch.search("ai", HistoryFilter(limit: 5), on: db)
        #expect(plain.matches.map(\.run.id) == [150, 149, 148, 147, 146] && plain.cut == nil)
    }

    @Test("a false match of the escape encoding (an em dash is \\342\\200\\224) is dropped, and the limit filled from older runs")
    func falseMatches() throws {
        let db = try Self.jobRuns(through: 8, output: "convert_to(CASE WHEN n <= 4 THEN 'HTTP 200 ok' ELSE 'HTTP — ok' END || chr(10), 'UTF8')")
        for indexed in [false, true] {
            if indexed { #expect(try FleetSearch.makeIndex(on: db) == .made) }
            let found = try FleetSearch.search("200", HistoryFilter(limit: 2), on: db)
            #expect(found.matches.map(\.run.id) == [4, 3], "indexed \(indexed): \(found)")
            #expect(found.matches.allSatisfy { $0.lines == [MatchedLine(line: 1, text: "HTTP 200 ok")] })
        }
    }

    @Test("stop: a search whose asker went away stops between statements, answering what it found")
    func stops() throws {
        let db = try Self.jobRuns(through: 8, output: "convert_to('found' || chr(10), 'UTF8')")
        #expect(try FleetSearch.search("found", HistoryFilter(limit: 20), stop: { true }, on: db).matches.isEmpty)
        var asked = 0
        let some = try FleetSearch.search("found", HistoryFilter(limit: 20), stop: { asked += 1; return asked > 3 }, on: db)
        #expect(some.matches.map(\.run.id) == [8, 7], "\(some)")
    }

    @Test("a search runs on a connection of its own: every pool connection busy, it still answers")
    func ownConnection() async throws {
        let (conninfo, db) = try FleetArtifactRowsTests.database()
        try db.execute("""
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation) VALUES (3, 'build', 'build n=1', 'success', 'queue', 3, 'web-1', 'x');
            INSERT INTO output_chunks (run_id, start, stream, at, bytes) VALUES (3, 0, 1, 3, convert_to('needle' || chr(10), 'UTF8'));
            """)
        // The pool's only connection is held: a search on it would wait for it.
        let pool = PGPool(conninfo: conninfo, defaults: [:], limit: 1)
        let held = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let store = FleetStore(pool: pool, host: FleetArtifactRowsTests.me, reactor: Reactor(), onProblem: { _ in }, onLost: { _ in })
        defer { _ = store.close() }
        defer { held.signal() }
        pool.submit({ _ in started.signal(); held.wait() }, completion: { _ in })
        try #require(started.wait(timeout: .now() + 60) == .success, "the held job began within 60 s (a connection)")
        // A deadline, not a speed: a search on the pool would wait until the held job is let go.
        let answered = await withTaskGroup(of: [Int64]?.self) { group in
            group.addTask { try? await store.search("needle", HistoryFilter(limit: 10), stop: { false }).matches.map(\.run.id) }
            group.addTask {
                try? await Task.sleep(for: .seconds(30))
                return nil
            }
            let first = await group.next() ?? nil
            held.signal()
            group.cancelAll()
            return first
        }
        #expect(answered == [3], "the search waited for the pool's connection")
    }

    @Test("the ILIKE pattern over encode(bytes, 'escape'): LIKE's characters escaped, high bytes and backslashes as the encoding writes them; a text beyond ASCII by its lowercased ASCII pieces")
    func pattern() {
        #expect(FleetSearch.pattern(SearchText("a%b_c")) == #"%a\%b\_c%"#)
        #expect(FleetSearch.pattern(SearchText(#"x\y"#)) == #"%x\\\\y%"#)
        #expect(FleetSearch.escaped("é") == #"\\303\\251"#)
        #expect(FleetSearch.pattern(SearchText("FINE Café")) == "%f%ne caf%")
        #expect(FleetSearch.pattern(SearchText("É")) == "%")
    }

    /// Run 1's output, run 2's, and run 3's params; what each text finds, newest first: the table
    /// of one host's `SearchCaseTests` (BatonStoreTests), which the fleet's answers must equal.
    static let beyondASCII = #"""
        first: { exec: ["sh", "-c", "echo 'Élan vital à la STRAẞE, café'"] },
        second: { exec: ["sh", "-c", "echo 'strasse 12'"] },
        third: { exec: ["sh", "-c", "echo nothing here"], params: { city: {} } },
        """#
    static let cases: [(text: String, runs: [Int64])] = [
        ("élan", [1]), ("ÉLAN VITAL", [1]), ("CAFÉ", [1]), ("straße", [1]), ("STRAẞE", [1]),
        ("STRASSE", [2]), ("évian", [3]), ("Évian", [3]), ("é", [3, 1]), ("É", [3, 1]),
    ]

    @Test("case beyond ASCII as one host ignores it (Unicode lowercasing), in output and params, whatever the database's encoding and locale, with the index and without",
          arguments: ["", "TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C'"], [false, true])
    func caseBeyondASCII(database options: String, index: Bool) throws {
        let conninfo = try Postgres.server().database(options)
        let host = try FleetTests.fleet(1, actions: Self.beyondASCII, conninfo: conninfo,
                                        settings: "requireUser: false," + (index ? #" search: "index","# : ""))[0]
        defer { host.stop() }
        if index { try host.waitForLog("is made: searches use it") }
        for run in [["first"], ["second"], ["third", "-p", "city=ÉVIAN"]] {
            #expect(try execute(Binaries.baton, ["--socket", host.socket, "run"] + run).code == 0)
        }
        for (text, runs) in Self.cases {
            let found = try host.baton("search", text, "--json")
            let matches = try JSONDecoder().decode([SearchMatch].self, from: Data(found.stdout.utf8))
            #expect(matches.map(\.run.id) == runs, "\(text): \(found.stdout)\(found.stderr)")
            if let byParams = matches.first(where: { $0.run.id == 3 }) { #expect(byParams.params == ["city"], "\(text)") }
            for match in matches where match.run.id != 3 { #expect(match.lineCount == 1, "\(text): \(match)") }
        }
    }
}
