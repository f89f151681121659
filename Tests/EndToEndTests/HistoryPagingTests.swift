import BatonCore
import BatonFleet
import Foundation
import Testing

/// Issue 37, item 12: one `history --limit 100000` cost batond 254 MiB, built whole before a byte
/// was sent; a long answer now goes a page at a time, read from the history as the client takes them.
@Suite("End to end: long histories", .serialized, .offPool)
struct HistoryPagingTests {
    static let count = 100_000
    /// 20 actions of 5,000 runs: under retention's 10,000 per action, so nothing is pruned.
    static let config = """
        { socketMode: "0666", actions: { \((0..<20).map { "a\($0): { exec: [\"true\"] }" }.joined(separator: ", ")) } }
        """

    /// A batond on a history of `count` ended runs, written straight into its file (batond made
    /// the schema, then stopped): run i is of action a(i % 20), a failure when i % 7 is 0. The
    /// first batond is returned too: its directory, which holds the files, goes with it.
    static func daemon() throws -> (daemon: Daemon, first: Daemon) {
        let first = try Daemon(config: config)
        first.stop()
        let script = """
            import sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1])
            now = int(time.time() * 1e6) - 3600 * 1000000
            rows = [("a%d" % (i % 20), "a%d" % (i % 20), "failure" if i % 7 == 0 else "success", "reject", '{"k":"%d"}' % i,
                     now + i, now + i + 10, now + i + 20, 1, 1 if i % 7 == 0 else 0, "exit") for i in range(1, int(sys.argv[2]) + 1)]
            db.executemany("INSERT INTO runs (action, key, phase, policy, params, queued_at, started_at, ended_at, attempts, exit_code, reason)"
                           " VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
            db.commit()
            """
        let seeded = try execute("/usr/bin/python3", ["-c", script, first.database, String(count)])
        try #require(seeded.code == 0, "\(seeded.stderr)")
        return (try Daemon(config: config, reusing: first), first)
    }

    /// batond's peak resident memory may grow by at most this (KiB) while 8 clients each ask for
    /// 100,000 runs and are read one after another (7 wait unread meanwhile). Each request holds
    /// at most a page (500 runs, about 0.3 MB as values and as its line) and what waits unsent
    /// for its client (at most a page past 256 KiB), so about 1 MB each, plus the history
    /// reader's page cache; 64 MiB leaves room for the allocator and the debug build. Before
    /// paging, one such request alone took 254 MiB.
    static let bound = HostileTests.sanitized ? 1_000_000 : 64 * 1_024

    /// Reads lines from a raw connection until the final answer; returns every line.
    static func lines(_ raw: HostileTests.Raw) -> [[UInt8]] {
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(raw.fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var lines: [[UInt8]] = [], partial: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(raw.fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return lines }
            partial += buffer[..<n]
            while let newline = partial.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Array(partial[..<newline])
                partial.removeSubrange(...newline)
                lines.append(line)
                if line.starts(with: Array(#"{"id":"h","ok":"#.utf8)) { return lines }
            }
        }
    }

    @Test("8 clients asking for 100,000 runs each get them all, in pages; batond's peak memory grows by a bounded amount")
    func memory() throws {
        let (daemon, seeder) = try Self.daemon()
        defer { daemon.stop(); withExtendedLifetime(seeder) {} }
        let pid = daemon.process.processIdentifier
        // Warm up (the reader's connection, its statements) and reset the peak to now.
        let warm = try HostileTests.Raw(daemon.socket)
        warm.send(Array(#"{"id":"h","op":"history","filter":{"limit":10}}"#.utf8) + [10])
        #expect(Self.lines(warm).count == 1)
        _ = try execute("/usr/bin/sh", ["-c", "echo 5 > /proc/\(pid)/clear_refs"])
        let baseline = try #require(ProcStatus.number("VmHWM", of: pid))
        let request = Array(#"{"id":"h","op":"history","filter":{"limit":100000}}"#.utf8) + [10]
        let clients = try (0..<8).map { _ in
            let raw = try HostileTests.Raw(daemon.socket)
            raw.send(request)
            return raw
        }
        var first: [[UInt8]]?
        for raw in clients {
            let lines = Self.lines(raw)
            if let first {
                #expect(lines == first, "every client gets the same answer")
                continue
            }
            first = lines
            let responses = lines.compactMap { try? JSONDecoder().decode(Response.self, from: Data($0)) }
            #expect(responses.count == lines.count && lines.count == Self.count / 500)
            #expect(responses.dropLast().allSatisfy { $0.ok == nil && $0.event == "runs" && $0.runs?.count == 500 })
            #expect(responses.last?.ok == true && responses.last?.runs?.count == 500)
            #expect(responses.flatMap { $0.runs ?? [] }.map(\.id) == Array((1...Int64(Self.count)).reversed()))
        }
        let grown = (ProcStatus.number("VmHWM", of: pid) ?? 0) - baseline
        print("history paging: batond's peak grew by \(grown) KiB from \(baseline) KiB (8 requests of 100,000 runs)")
        #expect(grown < Self.bound, "batond's peak resident memory grew by \(grown) KiB")
    }

    @Test("baton history through batond prints what the file holds: every run once, newest first, with filters", arguments: [
        ["--limit", "100000"],
        ["--limit", "100000", "--reverse"],
        ["--limit", "1234", "--action", "a3", "--action", "a4"],
        ["--limit", "100000", "--phase", "failure"],
        ["--limit", "501"],
        ["--limit", "500"],
    ])
    func cli(_ arguments: [String]) throws {
        let (daemon, seeder) = try Self.daemon()
        defer { daemon.stop(); withExtendedLifetime(seeder) {} }
        let viaDaemon = try execute(Binaries.baton, ["--socket", daemon.socket, "history", "--format", "ndjson"] + arguments)
        let fromFile = try execute(Binaries.baton, ["--socket", daemon.directory + "/nobody.sock", "--database", daemon.database,
                                                    "history", "--format", "ndjson"] + arguments)
        #expect(viaDaemon.code == 0 && fromFile.code == 0, "\(viaDaemon.stderr) \(fromFile.stderr)")
        let lines = viaDaemon.stdout.split(separator: "\n")
        #expect(viaDaemon.stdout == fromFile.stdout, "\(lines.count) lines through batond")
        let ids = lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["id"] as? Int
        }
        #expect(ids.count == lines.count && Set(ids).count == ids.count, "each run once")
        #expect(ids == (arguments.contains("--reverse") ? ids.sorted() : ids.sorted(by: >)))
        if arguments == ["--limit", "100000"] { #expect(ids.count == Self.count) }
        if arguments.contains("failure") { #expect(ids.count == Self.count / 7 && ids.allSatisfy { $0 % 7 == 0 }) }
        if arguments.contains("a3") { #expect(ids.count == 1_234 && ids.allSatisfy { [3, 4].contains($0 % 20) }) }
    }

    @Test("the dashboard's history of 1,000 runs (two pages from batond) is one list of all of them")
    func dashboard() throws {
        let (daemon, seeder) = try Self.daemon()
        defer { daemon.stop(); withExtendedLifetime(seeder) {} }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let history = try HTTPProbe.request(port: dashboard.port, "GET", "/api/history?limit=1000", fields: try dashboard.authorization())
        #expect(history.status == 200)
        let answer = try JSONDecoder().decode(Response.self, from: Data(history.body.utf8))
        #expect(answer.ok == true && answer.runs?.map(\.id) == Array((Int64(Self.count) - 999...Int64(Self.count)).reversed()))
    }

    @Test("a fleet's history of 1,200 runs comes in pages too: every run once, in order, either way")
    func fleet() throws {
        let conninfo = try Postgres.server().database()
        let host = try FleetTests.fleet(1, actions: #"quick: { exec: ["true"] },"#, conninfo: conninfo)[0]
        defer { host.stop() }
        let db = try PGConnection(conninfo)
        try db.query("""
            INSERT INTO runs (id, action, key, phase, policy, queued_at, host, incarnation, ended_at)
            SELECT g, 'quick', 'quick', 'success', 'reject', (extract(epoch FROM now()) * 1000000)::bigint - 10000000 + g, 'ghost', 'ghost/1/0',
                   (extract(epoch FROM now()) * 1000000)::bigint - 10000000 + g + 1
            FROM generate_series(1, 1200) g
            """)
        for reverse in [false, true] {
            let result = try execute(Binaries.baton, ["--socket", host.socket, "history", "--limit", "1200", "--format", "ndjson"] + (reverse ? ["--reverse"] : []))
            let ids = result.stdout.split(separator: "\n").compactMap { line in
                (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["id"] as? Int
            }
            #expect(result.code == 0 && ids == (reverse ? Array(1...1_200) : Array((1...1_200).reversed())), "\(ids.count) runs; \(result.stderr)")
        }
    }
}
