import BatonCore
import Foundation
import Testing

/// Issue 24, item 5, over HTTP: a run's output on the dashboard's event stream (live, resumed from
/// a byte offset, ended) and as raw bytes, on a real batond with a gated run.
@Suite("End to end: a run's output on the dashboard over HTTP", .offPool)
struct DashboardOutputTests {
    /// `talk` writes `one\n` (stdout), waits; `two\n` (stderr), waits; then `three\n`, a NUL, a 0xff
    /// byte and `end` (stdout) and ends: each wait is the gate, so the test knows what was written.
    static func config(_ gate: FifoGate) -> String {
        #"""
        { actions: { talk: { exec: ["sh", "-c", "printf 'one\\n'; cat \"$GATE\" >/dev/null; printf 'two\\n' >&2; cat \"$GATE\" >/dev/null; printf 'three\\n\\000\\377end'"],
                             env: { GATE: "\#(gate.path)" } } } }
        """#
    }

    static let expected: [(StandardStream, [UInt8])] = [(.stdout, Array("one\n".utf8)), (.stderr, Array("two\n".utf8)),
                                                          (.stdout, Array("three\n".utf8) + [0, 0xff] + Array("end".utf8))]

    /// One `output` event, decoded.
    struct Chunk: Equatable {
        var id: String?
        var start: Int64
        var stream: String
        var bytes: [UInt8]
        var end: Int64 { start + Int64(bytes.count) }
    }

    static func open(_ dashboard: DashboardProcess, run: Int64, lastEventID: String? = nil, session: Bool = true) throws -> HTTPProbe {
        let probe = try HTTPProbe(port: dashboard.port)
        var head = "GET /api/runs/\(run)/output HTTP/1.1\r\nHost: \(dashboard.hostPort)\r\n"
        if session { head += "Authorization: Bearer \(try dashboard.session())\r\n" }
        if let lastEventID { head += "Last-Event-ID: \(lastEventID)\r\n" }
        probe.send(head + "\r\n")
        return probe
    }

    static func decode(_ event: HTTPProbe.Event) throws -> Chunk {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.data.utf8)) as? [String: Any])
        let data = try #require((object["data"] as? String).flatMap { Data(base64Encoded: $0) })
        return Chunk(id: event.id, start: Int64(try #require(object["start"] as? Int)), stream: try #require(object["stream"] as? String),
                     bytes: Array(data))
    }

    /// Reads `output` events until their bytes reach `position`; fails on any other event.
    static func chunks(_ probe: HTTPProbe, until position: Int64) throws -> [Chunk] {
        var found: [Chunk] = []
        while (found.last?.end ?? 0) < position {
            let event = try #require(probe.nextEvent(), "after \(found.map(\.end)) of \(position) bytes")
            try #require(event.name == "output", "\(event)")
            found.append(try decode(event))
        }
        return found
    }

    /// Reads `output` events up to `end`; returns them and the end's data. The stream closes after it.
    static func rest(_ probe: HTTPProbe) throws -> (chunks: [Chunk], end: String) {
        var found: [Chunk] = []
        while true {
            let event = try #require(probe.nextEvent(), "no end after \(found.map(\.end))")
            if event.name == "end" {
                #expect(probe.nextEvent(timeout: .seconds(10)) == nil, "the stream closes after its end")
                return (found, event.data)
            }
            try #require(event.name == "output", "\(event)")
            found.append(try decode(event))
        }
    }

    /// The chunks cover `from…` with no gap and no overlap, each id its end; their bytes per stream.
    static func check(_ chunks: [Chunk], from: Int64) -> [String: [UInt8]] {
        var next = from
        var streams: [String: [UInt8]] = [:]
        for chunk in chunks {
            #expect(chunk.start == next, "a chunk at \(chunk.start) after \(next): a byte twice or lost")
            #expect(chunk.id == String(chunk.end), "the event id is the position after the chunk")
            next = chunk.end
            streams[chunk.stream, default: []] += chunk.bytes
        }
        return streams
    }

    @Test("the stream of a live gated run yields its chunks in order, resumes from Last-Event-ID (mid-chunk too), and ends at the run's end")
    func liveStream() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate))
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try daemon.baton("run", "talk", "--detach").stdout == "1\n")

        // A first page sees `one`, then goes away while the run waits.
        var first: HTTPProbe? = try Self.open(dashboard, run: 1)
        let seen = try Self.chunks(try #require(first), until: 4)
        #expect(Self.check(seen, from: 0) == ["stdout": Array("one\n".utf8)])
        first = nil

        // It comes back from the last id it had: what was written meanwhile, then live, then the end.
        gate.release()
        let second = try Self.open(dashboard, run: 1, lastEventID: try #require(seen.last?.id))
        let two = try Self.chunks(second, until: 8)
        #expect(Self.check(two, from: 4) == ["stderr": Array("two\n".utf8)])
        gate.release()
        let (three, end) = try Self.rest(second)
        #expect(Self.check(three, from: 8) == ["stdout": Self.expected[2].1])
        #expect(end.contains(#""phase":"success""#) && end.contains(#""outputEnd":19"#), "\(end)")

        // The ended run: all of it from the history, in order, then the end; and from inside a chunk.
        let all = try Self.rest(try Self.open(dashboard, run: 1))
        #expect(all.chunks.map(\.stream) == ["stdout", "stderr", "stdout"])
        #expect(all.chunks.map(\.bytes) == Self.expected.map(\.1))
        _ = Self.check(all.chunks, from: 0)
        let fromSix = try Self.rest(try Self.open(dashboard, run: 1, lastEventID: "6"))
        #expect(fromSix.chunks.first.map { ($0.start, $0.bytes) } ?? (0, []) == (6, Array("o\n".utf8)))
        _ = Self.check(fromSix.chunks, from: 6)
        #expect(try Self.rest(try Self.open(dashboard, run: 1, lastEventID: "19")).chunks.isEmpty, "nothing after the end")
    }

    @Test("the raw download is the bytes, as an attachment never sniffed or framed; output needs the session, a run batond has, and a position")
    func rawAndRefusals() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate))
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try daemon.baton("run", "talk", "--detach").code == 0)
        // Each release once the run waits at the gate again (its output says so).
        let follow = try Self.open(dashboard, run: 1)
        _ = try Self.chunks(follow, until: 4)
        gate.release()
        _ = try Self.chunks(follow, until: 8)
        gate.release()
        _ = try Self.rest(follow)
        let session = try dashboard.authorization()

        let raw = try HTTPProbe.request(port: dashboard.port, "GET", "/api/runs/1/output.raw", fields: session)
        #expect(raw.status == 200)
        #expect(raw.bytes == Self.expected.flatMap(\.1))
        #expect(raw.field("Content-Type") == "application/octet-stream")
        #expect(raw.field("Content-Disposition") == #"attachment; filename="run-1-output""#)
        #expect(raw.field("X-Content-Type-Options") == "nosniff" && raw.field("Content-Security-Policy")?.hasPrefix("default-src 'none'") == true)
        #expect(raw.field("Access-Control-Allow-Origin") == nil && raw.field("Set-Cookie") == nil)

        let cases: [(String, String, [String: String], Int)] = [
            ("GET", "/api/runs/1/output.raw", [:], 401),
            ("GET", "/api/runs/1/output", [:], 401),
            ("GET", "/api/runs/1/output.raw", ["Authorization": "Bearer wrong"], 401),
            ("GET", "/api/runs/1/output.raw", ["Cookie": "baton_dashboard=\(try dashboard.session())"], 401),
            ("GET", "/api/runs/1/output.raw", session.merging(["Host": "attacker.example:\(dashboard.port)"]) { $1 }, 421),
            ("POST", "/api/runs/1/output.raw", session.merging(["Origin": "http://\(dashboard.hostPort)"]) { $1 }, 405),
            ("HEAD", "/api/runs/1/output", session, 405),
            ("GET", "/api/runs/999/output.raw", session, 404),
            ("GET", "/api/runs/1/output", session.merging(["Last-Event-ID": "-5"]) { $1 }, 400),
        ]
        for (method, path, fields, status) in cases {
            let answer = try HTTPProbe.request(port: dashboard.port, method, path, fields: fields)
            #expect(answer.status == status, "\(method) \(path) \(fields) → \(answer.status) \(answer.body)")
            if status == 401 { #expect(!answer.bytes.contains(0xff), "no output in a refusal") }
        }
        // A run batond does not have: the stream says batond's refusal, then closes.
        let unknown = try Self.open(dashboard, run: 999)
        let refusal = unknown.nextEvent()
        #expect(refusal?.name == "refused" && refusal?.data.contains("999") == true, "\(String(describing: refusal))")
        #expect(unknown.nextEvent(timeout: .seconds(10)) == nil)
    }

    /// Which side lets go depends on speed: batond drops the dashboard's follow when the dashboard
    /// falls 1 MiB behind (the page then gets `offline`), or the dashboard drops the page past its
    /// stream buffer. Either way the page gets no `end`, the run is not held up, and it resumes.
    @Test("a page that stops reading while the run floods is dropped, the run is not held up, and it resumes from its last id to the end")
    func slowReader() throws {
        let gate = try FifoGate()
        // 48 MiB as fast as head writes it: far past the stream buffer and the kernel's socket buffers.
        let daemon = try Daemon(config: #"""
            { actions: { flood: { exec: ["sh", "-c", "echo ready; cat \"$GATE\" >/dev/null; head -c 50331648 /dev/zero"],
                                  env: { GATE: "\#(gate.path)" }, output: { keep: "1MiB" } } } }
            """#)
        defer { daemon.stop() }
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        #expect(try daemon.baton("run", "flood", "--detach").code == 0)
        let probe = try Self.open(dashboard, run: 1)
        _ = try Self.chunks(probe, until: 6)
        // The page follows live; now it reads nothing while the run floods.
        gate.release()
        #expect(try daemon.baton("wait", "1").code == 0)
        var names: Set<String> = []
        var last: HTTPProbe.Event?
        while let event = probe.nextEvent(timeout: .seconds(30)) {
            names.insert(event.name)
            if event.name == "output" { last = event }
        }
        #expect(!names.contains("end"), "the page was dropped before the end: \(names)")
        let id = try #require(last?.id)
        #expect(try #require(Int64(id)) < 50_331_654, "it had not got it all")
        print("dashboard slow reader: dropped after \(id) bytes; events \(names.sorted()) (offline: batond dropped the dashboard's follow)")
        let again = try Self.open(dashboard, run: 1, lastEventID: id)
        let (rest, end) = try Self.rest(again)
        #expect(end.contains(#""phase":"success""#) && end.contains(#""outputEnd":50331654"#), "\(end)")
        #expect((rest.first?.start ?? 0) >= Int64(id)!, "nothing before the id comes again")
        #expect(rest.last?.end == 50_331_654)
        #expect(try daemon.baton("status").code == 0)
    }
}
