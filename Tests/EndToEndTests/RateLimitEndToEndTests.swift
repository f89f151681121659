import BatonCore
import BatonIPC
import BatonStore
import Foundation
import Testing

/// Rate limits over the socket with the real binaries: a trigger over the limit refused (exit 75)
/// naming the limit and when the next run may start, recorded against no run, counted in
/// `/metrics`, shown in `status`; a restart keeps counting the starts in the history; with
/// `over: "delay"` the run waits queued (status shows its start time) and starts then.
@Suite("End to end: rate limits", .serialized, .offPool)
struct RateLimitEndToEndTests {
    static let config = """
        {
          requireUser: false,
          actions: {
            deploy: { exec: ["true"], rateLimit: { runs: 2, per: "1h" } },
            sync: { exec: ["true"], rateLimit: { runs: 1, per: "2s", over: "delay" } },
            hourly: { exec: ["true"], rateLimit: { runs: 1, per: "1h", over: "delay" } },
          },
        }
        """

    @Test("over: reject: the third run in the hour is refused with exit 75, recorded, counted and shown; a restart still refuses it")
    func reject() throws {
        let first = try Daemon(config: Self.config)
        #expect(try first.baton("run", "deploy").code == 0)
        #expect(try first.baton("run", "deploy").code == 0)
        let refused = try first.baton("run", "deploy")
        #expect(refused.code == 75, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("deploy is rate limited: at most 2 runs per 1h00m per key; the next run may start in "),
                "\(refused.stderr)")
        let before = Int64(Date().timeIntervalSince1970 * 1_000_000)
        let answer = try PolicyTests.trigger(first, "deploy")
        #expect(answer.error?.code == .rateLimited)
        let next = try #require(answer.error?.next)
        #expect(next > before + 3_500_000_000 && next <= before + 3_600_000_000, "an hour after the first start: \(next - before) µs from now")
        let status = try first.baton("status", "deploy")
        #expect(status.stdout.contains("deploy: rate limit 2 runs per 1h00m per key (refuses the rest): 0 left; the oldest start leaves the window in "),
                "\(status.stdout)")
        let metrics = try first.baton("metrics").stdout
        #expect(metrics.contains("baton_triggers_total{action=\"deploy\",decision=\"rateLimited\"} 2"), "\(metrics)")
        let refusals = try first.baton("history", "--denied")
        #expect(refusals.stdout.contains("rate limited") && refusals.stdout.contains("deploy"), "\(refusals.stdout)")
        first.stop()
        let second = try Daemon(config: Self.config, reusing: first, name: "restarted")
        let again = try second.baton("run", "deploy")
        #expect(again.code == 75 && again.stderr.contains("is rate limited"), "the starts in the history still count: \(again.stderr)")
        let connection = try Connection(path: second.database, readOnly: true)
        #expect(try connection.scalar("SELECT count(*) FROM triggers WHERE action = 'deploy' AND decision = 'rate limited' AND run_id IS NULL")?.int64 == 3)
        #expect(try connection.scalar("SELECT count(*) FROM runs WHERE action = 'deploy'")?.int64 == 2)
    }

    @Test("over: delay: a second run waits queued, shown as rate limited with its start time, and starts once the window lets it")
    func delay() throws {
        let daemon = try Daemon(config: Self.config)
        #expect(try daemon.baton("run", "sync").code == 0)
        let detached = try daemon.baton("run", "sync", "--detach")
        #expect(detached.code == 0, "\(detached.stderr)")
        let status = try daemon.baton("status", "sync")
        #expect(status.stdout.contains("rate limited, starts in 1.") || status.stdout.contains("rate limited, starts in 0."), "\(status.stdout)")
        let json = try daemon.baton("status", "--json").stdout
        let infos = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]] ?? []
        let live = infos.first { $0["name"] as? String == "sync" }?["inFlight"] as? [[String: Any]] ?? []
        #expect(live.first?["rateUntil"] is NSNumber, "\(json)")
        let waited = try daemon.baton("wait", "2")
        #expect(waited.code == 0, "\(waited.stdout)\(waited.stderr)")
        let connection = try Connection(path: daemon.database, readOnly: true)
        let first = try #require(try connection.scalar("SELECT started_at FROM runs WHERE id = 1")?.int64)
        let second = try #require(try connection.scalar("SELECT started_at FROM runs WHERE id = 2")?.int64)
        #expect(second - first >= 2_000_000, "the second start is a window after the first: \(second - first) µs")
        #expect(second - first < 4_000_000, "and not much later: \(second - first) µs")
    }

    @Test("a delayed run queued at a restart is queued again and still waits for the window of the start before the restart")
    func delayAcrossRestart() throws {
        let first = try Daemon(config: Self.config)
        #expect(try first.baton("run", "hourly").code == 0)
        #expect(try first.baton("run", "hourly", "--detach").code == 0)
        first.stop()
        let second = try Daemon(config: Self.config, reusing: first, name: "restarted")
        let json = try second.baton("status", "--json").stdout
        let infos = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]] ?? []
        let live = infos.first { $0["name"] as? String == "hourly" }?["inFlight"] as? [[String: Any]] ?? []
        let connection = try Connection(path: second.database, readOnly: true)
        let started = try #require(try connection.scalar("SELECT started_at FROM runs WHERE id = 1")?.int64)
        #expect(live.first?["id"] as? Int == 2 && live.first?["phase"] as? String == "queued", "\(json)")
        #expect((live.first?["rateUntil"] as? NSNumber)?.int64Value == started + 3_600_000_000, "an hour after run 1's start: \(json)")
        #expect(try connection.scalar("SELECT started_at FROM runs WHERE id = 2")?.int64 == nil)
    }
}
