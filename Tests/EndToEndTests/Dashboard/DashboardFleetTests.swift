import BatonCore
import Foundation
import Testing

/// The dashboard of one host of a fleet shows every host's runs: live on its event stream and in
/// its history, each with the host that ran it.
@Suite("End to end: the dashboard of a fleet", .serialized)
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
}
