import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Rate limits across a fleet (issue 40, item 3): a bucket counts every host's starts, from the
/// runs' rows, decided under the bucket's lock in each host's transaction.
@Suite("End to end: rate limits across a fleet", .serialized, .offPool)
struct FleetRateTests {
    @Test("over: reject: web-1's and web-2's runs fill one window; the third, on either host, is refused with when the next may start, recorded")
    func reject() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: #"deploy: { exec: ["true"], rateLimit: { runs: 2, per: "1h", scope: "action" } },"#,
                                         conninfo: conninfo)
        #expect(try hosts[0].baton("run", "deploy").code == 0)
        #expect(try hosts[1].baton("run", "deploy").code == 0)
        for host in hosts {
            let refused = try host.baton("run", "deploy")
            #expect(refused.code == 75 && refused.stderr.contains("deploy is rate limited: at most 2 runs per 1h00m per action"),
                    "\(refused.stdout)\(refused.stderr)")
        }
        let db = try PGConnection(conninfo)
        #expect(try db.query("SELECT count(*) FROM runs WHERE action = 'deploy'").first?[0] == "2")
        #expect(try db.query("SELECT count(*) FROM triggers WHERE action = 'deploy' AND decision = 'rate limited' AND run_id IS NULL").first?[0] == "2")
        for host in hosts { host.stop() }
    }

    @Test("triggers from both hosts at once, 1 run per 2 s per action: no window ever holds two starts, whichever host starts them")
    func concurrent() throws {
        let conninfo = try Postgres.server().database()
        let hosts = try FleetTests.fleet(2, actions: """
            sync: { exec: ["true"], params: { n: {} }, keyParams: ["n"], rateLimit: { runs: 1, per: "2s", scope: "action", over: "delay" } },
            """, conninfo: conninfo)
        var runs: [Int64] = []
        for n in 0..<4 {
            let answer = try Client(path: hosts[n % 2].socket).call(Request(op: .trigger, action: "sync", params: ["n": String(n)], detach: true))
            #expect(answer.ok == true, "\(String(describing: answer.error))")
            if let id = answer.run?.id { runs.append(id) }
        }
        #expect(runs.count == 4)
        // A run held back says so, with when it starts (its row's rate_until), on any host.
        try Eventually.until("web-2's status says sync is rate limited") { try hosts[1].baton("status", "sync").stdout.contains("rate limited, starts in") }
        for (index, run) in runs.enumerated() { #expect(try FleetTests.wait(hosts[index % 2], run: run)?.phase == .success) }
        let db = try PGConnection(conninfo)
        // By the database's clock, which every host's decision compares with.
        let starts = try db.query("SELECT rate_at FROM runs WHERE action = 'sync' ORDER BY rate_at").rows.compactMap { $0[0].flatMap { Int64($0) } }
        #expect(starts.count == 4)
        for (earlier, later) in zip(starts, starts.dropFirst()) {
            #expect(later - earlier >= 2_000_000, "two starts in one 2 s window: \(starts)")
        }
        for host in hosts { host.stop() }
    }
}
