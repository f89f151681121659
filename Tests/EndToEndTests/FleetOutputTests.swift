import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Issue 24, item 6: a run's output in the fleet's database, followed from any host.
@Suite("End to end: a run's output across the fleet", .serialized, .offPool)
struct FleetOutputTests {
    /// Two hosts whose `talk` writes "one" (stdout) and "oops" (stderr), waits for the gate, then
    /// "two", "late" (stderr) and "three": the first part is out before the gate opens.
    static func gatedTalk() throws -> (gate: FifoGate, a: Daemon, b: Daemon) {
        let gate = try FifoGate()
        let script = gate.directory + "/talk.sh"
        try """
            echo one; echo oops >&2; cat "$GATE" > /dev/null; echo two; echo late >&2; printf 'three\\n'
            """.write(toFile: script, atomically: true, encoding: .utf8)
        let hosts = try FleetTests.fleet(2, actions: #"talk: { exec: ["sh", "\#(script)"], env: { GATE: "\#(gate.path)" } },"#)
        return (gate, hosts[0], hosts[1])
    }

    @Test("logs -f on host B prints what A's run wrote, the first part before the gate opens and the rest after, once, in order; logs after the end reads the same on both hosts")
    func followFromAnotherHost() throws {
        let (gate, a, b) = try FleetOutputTests.gatedTalk()
        let started = try FleetTests.trigger(a, "talk")
        let id = try #require(started.run?.id)
        #expect(started.run?.host == "web-1")
        let logs = try Streaming(["--socket", b.socket, "logs", "-f", String(id)])
        // What A's run wrote before the gate reaches B while the run still waits at it.
        #expect(logs.waitFor("one\n") && logs.waitFor("oops\n"), "\(b.stderr.suffix(1500))")
        #expect(!logs.output.current.contains("two"))
        gate.release()
        let end = logs.finish()
        #expect(end.code == 0, "\(end)\n\(b.stderr.suffix(1500))")
        // Two pipes: which of their lines A read first is the kernel's; B prints it as A kept it.
        let kept = try a.baton("logs", String(id))
        #expect(kept.code == 0 && end.stdout == kept.stdout, "followed on B: \(end.stdout)\nkept on A: \(kept.stdout)")
        #expect(try b.baton("logs", String(id)).stdout == kept.stdout)
        #expect(try b.baton("logs", String(id), "--stream", "stdout").stdout == "one\ntwo\nthree\n")
        #expect(try b.baton("logs", String(id), "--stream", "stderr").stdout == "oops\nlate\n")
        #expect(kept.stdout.split(separator: "\n").sorted() == ["late", "one", "oops", "three", "two"])
    }

    @Test("a run writing more than output.keep is cut in the fleet as on one host: its head and tail kept, what fell between counted")
    func keep() throws {
        let hosts = try FleetTests.fleet(2, actions: """
            big: { exec: ["sh", "-c", "seq 1 200000"], output: { keep: "64KiB" } },
            none: { exec: ["sh", "-c", "seq 1 1000"], output: { keep: "0" } },
            """)
        let (a, b) = (hosts[0], hosts[1])
        let big = try #require(try FleetTests.trigger(a, "big").run?.id)
        #expect(try FleetTests.wait(a, run: big)?.phase == .success)
        let all = Array((1...200_000).map { "\($0)\n" }.joined().utf8)
        let kept = try Self.output(b, run: big)
        #expect(Array(kept.bytes.prefix(32 * 1_024)) == Array(all.prefix(32 * 1_024)))
        #expect(Array(kept.bytes.suffix(32 * 1_024)) == Array(all.suffix(32 * 1_024)))
        #expect(kept.bytes.count <= 2 * 64 * 1_024 && kept.bytes.count < all.count)
        #expect(kept.dropped == Int64(all.count - kept.bytes.count))
        #expect(kept.end == Int64(all.count))
        #expect(try a.baton("logs", String(big)).stdout == b.baton("logs", String(big)).stdout)
        let none = try #require(try FleetTests.trigger(a, "none").run?.id)
        #expect(try FleetTests.wait(a, run: none)?.phase == .success)
        let empty = try Self.output(b, run: none)
        #expect(empty.bytes.isEmpty && (empty.dropped ?? 0) > 0)
    }

    @Test("the fleet's retention removes a run's output with it; prune --dry-run on any host counts its bytes")
    func retention() throws {
        let hosts = try FleetTests.fleet(2, actions: #"hello: { exec: ["printf", "hello\\n"], retention: { maxRunsPerAction: 1 } },"#)
        let (a, b) = (hosts[0], hosts[1])
        let first = try #require(try FleetTests.trigger(a, "hello").run?.id)
        #expect(try FleetTests.wait(a, run: first)?.phase == .success)
        let second = try #require(try FleetTests.trigger(a, "hello").run?.id)
        #expect(try FleetTests.wait(a, run: second)?.phase == .success)
        #expect(try b.baton("logs", String(first)).stdout == "hello\n")
        let found = { () throws -> [Int64] in
            try JSONDecoder().decode([SearchMatch].self, from: Data(try a.baton("search", "hello", "--json").stdout.utf8)).map(\.run.id)
        }
        #expect(try found() == [second, first])
        let dry = try b.baton("prune", "--dry-run")
        #expect(dry.stdout == "would remove 1 run (6 B of output): hello 1\n", "\(dry)")
        #expect(try b.baton("prune").code == 0)
        #expect(try b.baton("prune", "--dry-run").stdout == "nothing to remove\n")
        #expect(try b.baton("logs", String(first)).code == 2)
        #expect(try b.baton("logs", String(second)).stdout == "hello\n")
        // Its chunks, and so what the search index has of them, went with it.
        #expect(try found() == [second])
    }

    @Test("bytes go through PostgreSQL exactly: NUL, invalid UTF-8, a carriage return, read on the other host")
    func bytes() throws {
        let hosts = try FleetTests.fleet(2, actions: #"raw: { exec: ["printf", "a\\000\\377\\r\\n"] },"#)
        let run = try #require(try FleetTests.trigger(hosts[0], "raw").run?.id)
        #expect(try FleetTests.wait(hosts[0], run: run)?.phase == .success)
        #expect(try Self.output(hosts[1], run: run).bytes == [0x61, 0x00, 0xff, 0x0d, 0x0a])
    }

    @Test("a commit of a run's chunks notifies baton_output with the run's id (what wakes other hosts' followers), while the run goes on")
    func notifies() throws {
        let gate = try FifoGate()
        let conninfo = try Postgres.server().database()
        let listener = try PGConnection(conninfo)
        try listener.execute("LISTEN baton_output")
        let hosts = try FleetTests.fleet(2, actions: """
            talk: { exec: ["sh", "-c", "echo one; cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" } },
            """, conninfo: conninfo)
        let run = try #require(try FleetTests.trigger(hosts[0], "talk").run?.id)
        defer { gate.release() }
        #expect(try Self.notification(on: listener, within: 10).contains(String(run)))
        #expect(try Client(path: hosts[0].socket).call(Request(op: .show, run: run)).detail?.run.phase == .loading)
    }

    /// The payloads of the first notifications to arrive within `seconds` (none: empty).
    static func notification(on db: PGConnection, within seconds: Double) throws -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var fd = pollfd(fd: db.socket, events: Int16(POLLIN), revents: 0)
            _ = poll(&fd, 1, Int32(max(deadline.timeIntervalSinceNow * 1_000, 1)))
            let payloads = try db.notifications().map(\.payload)
            if !payloads.isEmpty { return payloads }
        }
        return []
    }

    /// A run's whole kept output through the `output` op, and what the answer says was dropped.
    static func output(_ host: Daemon, run: Int64) throws -> (bytes: [UInt8], dropped: Int64?, end: Int64?) {
        var bytes: [UInt8] = []
        let answer = try Client(path: host.socket).call(Request(op: .output, run: run)) { event in
            if let chunk = event.chunk { bytes += chunk.bytes }
        }
        return (bytes, answer.outputDropped, answer.outputEnd)
    }
}
