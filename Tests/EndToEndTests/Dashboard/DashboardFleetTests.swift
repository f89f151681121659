import BatonCore
import BatonIPC
import Foundation
import Testing

/// The dashboard of one host of a fleet shows every host's runs: live on its event stream and in
/// its history, each with the host that ran it; and their output, as it is written.
@Suite("End to end: the dashboard of a fleet", .serialized, .offPool)
struct DashboardFleetTests {
    @Test("a run triggered on web-2 reaches web-1's dashboard stream and history, with its host")
    func otherHostsRuns() throws {
        let hosts = try FleetTests.fleet(2, actions: #"quick: { exec: ["true"] },"#)
        let dashboard = try DashboardProcess(socket: hosts[0].socket)
        defer { dashboard.stop() }
        let probe = try HTTPProbe(port: dashboard.port)
        probe.send("GET /events HTTP/1.1\r\nHost: \(dashboard.hostPort)\r\nAuthorization: Bearer \(try dashboard.session())\r\n\r\n")
        #expect(probe.nextEvent()?.name == "snapshot")
        let run = try #require(try FleetTests.trigger(hosts[1], "quick", detach: false).run)
        #expect(run.phase == .success && run.host == "web-2")
        var phases: [String] = []
        while phases.last != "success", let event = probe.nextEvent(), event.name != "offline" {
            guard event.name == "update", let response = try? JSONDecoder().decode(Response.self, from: Data(event.data.utf8)),
                  response.run?.id == run.id else { continue }
            #expect(response.run?.host == "web-2")
            phases.append(response.transition?.to.rawValue ?? "")
        }
        #expect(phases == ["queued", "loading", "success"])
        let history = try HTTPProbe.request(port: dashboard.port, "GET", "/api/history", fields: try dashboard.authorization())
        #expect(history.status == 200 && history.body.contains(#""host":"web-2""#), "\(history.body)")
    }

    @Test("web-2's dashboard follows web-1's run's output live: the first part before the gate opens, in order, stderr marked; the rest to the run's end; each id the position past its chunk, from which a reconnect gets exactly the rest; output.raw as web-1's logs")
    func otherHostsOutput() throws {
        typealias Page = DashboardOutputTests
        let (gate, a, b) = try FleetOutputTests.gatedTalk()
        let dashboard = try DashboardProcess(socket: b.socket)
        defer { dashboard.stop() }
        let started = try FleetTests.trigger(a, "talk")
        let id = try #require(started.run?.id)
        #expect(started.run?.host == "web-1")

        // What A's run wrote before the gate reaches B's page while the run still waits at it: two
        // pipes, so which line comes first is the kernel's; each in its stream, no byte twice or lost.
        let page = try Page.open(dashboard, run: id)
        let first = try Page.chunks(page, until: 9)
        #expect(Page.check(first, from: 0) == ["stdout": Array("one\n".utf8), "stderr": Array("oops\n".utf8)], "\(first)")
        #expect(try Client(path: a.socket).call(Request(op: .show, run: id)).detail?.run.phase == .loading)
        // A second page comes back from the first event's id, still before the gate: the rest of the first part.
        let middle = try #require(first.first?.id)
        let resumed = try Page.open(dashboard, run: id, lastEventID: middle)
        let resumedFirst = try Page.chunks(resumed, until: 9)

        gate.release()
        let (rest, end) = try Page.rest(page)
        let all = first + rest
        #expect(Page.check(all, from: 0) == ["stdout": Array("one\ntwo\nthree\n".utf8), "stderr": Array("oops\nlate\n".utf8)])
        #expect(end.contains(#""phase":"success""#) && end.contains(#""outputEnd":24"#), "\(end)\n\(b.stderr.suffix(1500))")
        // B's page shows the bytes in the order A kept them.
        let kept = try a.baton("logs", String(id))
        let bytes = all.flatMap(\.bytes)
        #expect(kept.code == 0 && bytes == Array(kept.stdout.utf8), "on B's page: \(all)\nkept on A: \(kept.stdout)")

        let (resumedRest, resumedEnd) = try Page.rest(resumed)
        let from = try #require(Int(middle))
        #expect(from > 0 && from < 9)
        _ = Page.check(resumedFirst + resumedRest, from: Int64(from))
        #expect((resumedFirst + resumedRest).flatMap(\.bytes) == Array(bytes[from...]))
        #expect(resumedEnd.contains(#""outputEnd":24"#), "\(resumedEnd)")
        // From each id, once the run has ended: exactly the bytes past it, then the end.
        for chunk in all {
            let again = try Page.rest(try Page.open(dashboard, run: id, lastEventID: chunk.id))
            _ = Page.check(again.chunks, from: chunk.end)
            #expect(again.chunks.flatMap(\.bytes) == Array(bytes[Int(chunk.end)...]), "from \(chunk.end)")
        }

        let raw = try HTTPProbe.request(port: dashboard.port, "GET", "/api/runs/\(id)/output.raw", fields: try dashboard.authorization())
        #expect(raw.status == 200 && raw.bytes == Array(kept.stdout.utf8), "\(raw.status) \(raw.body)")
    }
}
