import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// Issue 39, item 4: a host's busiest commits (a run's end and the starts after it, a trigger
/// batch's new runs) notify only where another host listens (`FleetCompany`); its own feed is
/// told in-process. A test connection LISTENs beside the hosts and hears what they send: each
/// commit's NOTIFY names its host's incarnation, a feed's greeting is `hello INCARNATION`.
@Suite("End to end: a fleet host alone notifies nobody, and one that another joins notifies it at once", .serialized, .offPool)
struct FleetCompanyEndToEndTests {
    /// A host with a lease long enough (a renewal every minute) that only a greeting can tell it of company within a test.
    static func host(_ name: String, conninfo: String, gate: FifoGate) throws -> Daemon {
        let host = try Daemon(config: """
            { postgres: "\(conninfo)", host: "\(name)", lease: "300s", maxConcurrentRuns: 8,
              actions: { quick: { exec: ["true"] }, \(FleetTests.gated(gate)) } }
            """)
        try host.waitForLog("joined the fleet")
        return host
    }

    /// The incarnation a host joined as (its log's `joined the fleet as NAME (INCARNATION)`).
    static func incarnation(_ host: Daemon, _ name: String) throws -> String {
        let text = host.stderr
        let range = try #require(text.range(of: "joined the fleet as \(name) ("))
        return String(text[range.upperBound...].prefix { $0 != ")" })
    }

    /// The payloads of `baton` the listener was sent since last asked (a round trip first, so
    /// that what was committed before is in).
    static func heard(_ listener: PGConnection) throws -> [String] {
        _ = try listener.query("SELECT 1")
        return try listener.notifications().filter { $0.channel == "baton" }.map(\.payload)
    }

    /// Until a run of `host` (`quick`, waited for) is committed with a NOTIFY naming `incarnation`
    /// (`notifies`), or without any NOTIFY of its commits (untagged ones included).
    static func untilRuns(_ host: Daemon, _ incarnation: String, notify notifies: Bool, listener: PGConnection, within seconds: Double = 20) throws {
        try Eventually.until("\(incarnation)'s runs \(notifies ? "notify" : "notify nobody")", within: seconds) {
            _ = try heard(listener)
            _ = try FleetTests.trigger(host, "quick", detach: false)
            let news = try heard(listener).filter { $0 == incarnation || $0.isEmpty }
            return news.isEmpty != notifies
        }
    }

    @Test("a host alone commits its runs without NOTIFY, and its watch hears each run's end from its own feed at once, not at the feed's once-a-second tick")
    func alone() throws {
        let conninfo = try Postgres.server().database()
        let listener = try PGConnection(conninfo)
        try listener.execute("LISTEN baton")
        let gate = try FifoGate()
        let host = try Self.host("web-1", conninfo: conninfo, gate: gate)
        let me = try Self.incarnation(host, "web-1")
        // Company is assumed until the lease's first renewal answers.
        try Self.untilRuns(host, me, notify: false, listener: listener)
        let watch = try Client(path: host.socket)
        _ = try watch.send(Request(op: .watch, action: "quick"))
        #expect(try watch.receive(timeout: .seconds(10))?.event == "watching")
        let began = Date()
        for _ in 0..<20 {
            // Answered by the conductor at the end; the watch hears it through the feed.
            let run = try #require(try FleetTests.trigger(host, "quick", detach: false).run?.id)
            var ended = false
            while !ended, let update = try watch.receive(timeout: .seconds(20)) {
                ended = update.run?.id == run && update.transition?.to.isTerminal == true
            }
            #expect(ended, "run \(run)'s end never reached the watch")
        }
        // Told by the feed's once-a-second tick alone, each end would take about a second: 20 s at least
        // (each run starts once the last end was heard), about 4 s told in-process on a quiet machine;
        // the bound leaves a loaded one room.
        let took = Date().timeIntervalSince(began)
        #expect(took < 15, "20 runs' ends took \(took) s to reach the watch")
        #expect(try Self.heard(listener).filter { $0 == me || $0.isEmpty } == [], "web-1 alone notified")
        // Its feed delivered its own commits from their own rows (`OwnCommit`), not by reading
        // them back: every run's end but those a once-a-second catch-up happened to read first.
        let metrics = try #require(try Client(path: host.socket).call(Request(op: .metrics)).metrics)
        let own = try #require(Self.sample(metrics, #"baton_fleet_feed_transitions_total{source="own"}"#))
        let read = try #require(Self.sample(metrics, #"baton_fleet_feed_transitions_total{source="read"}"#))
        #expect(own >= 20 && own > read, "own \(own), read \(read)")
        #expect(Self.sample(metrics, "baton_fleet_feed_catchup_reads_total") ?? 0 > 0)
    }

    @Test("a host alone delivers the commits that end a run and start its follow-up (in a savepoint: a subtransaction) from their own rows, not by reading them back")
    func followUps() throws {
        let conninfo = try Postgres.server().database()
        let gate = try FifoGate()
        let host = try Self.host("web-1", conninfo: conninfo, gate: gate)
        var running = try #require(try FleetTests.trigger(host, "gated").run?.id)
        for _ in 0..<12 {
            let next = try #require(try FleetTests.trigger(host, "gated", policy: .queue).run?.id)
            gate.release()
            #expect(try FleetTests().waitUntilPhase(host, next, .loading), "run \(next) never started after run \(running)")
            #expect(try FleetTests.wait(host, run: running)?.phase == .success)
            running = next
        }
        gate.release()
        #expect(try FleetTests.wait(host, run: running)?.phase == .success)
        // A subtransaction is listed in progress by no snapshot: unless handed with its commit, each
        // looked finished and undelivered to the next commit, which was read back by a catch-up.
        let metrics = try #require(try Client(path: host.socket).call(Request(op: .metrics)).metrics)
        let own = try #require(Self.sample(metrics, #"baton_fleet_feed_transitions_total{source="own"}"#))
        let read = try #require(Self.sample(metrics, #"baton_fleet_feed_transitions_total{source="read"}"#))
        #expect(own >= 36 && read * 4 < own, "own \(own), read \(read)")
    }

    @Test("a host's watch hears each transition of its runs once, in order: a catch-up leaves out what was delivered ahead")
    func exactlyOnce() throws {
        let conninfo = try Postgres.server().database()
        let host = try Self.host("web-1", conninfo: conninfo, gate: try FifoGate())
        let watch = try Client(path: host.socket)
        _ = try watch.send(Request(op: .watch, action: "quick"))
        #expect(try watch.receive(timeout: .seconds(10))?.event == "watching")
        var runs: [Int64] = []
        for _ in 0..<20 { runs.append(try #require(try FleetTests.trigger(host, "quick", detach: false).run?.id)) }
        // Until every end is heard, then past two of the feed's once-a-second catch-ups: one that
        // read a commit delivered ahead would repeat its transitions.
        var heard: [Int64: [Int]] = [:]
        var quietUntil: Date?
        while quietUntil.map({ Date() < $0 }) ?? true {
            let update = try watch.receive(timeout: quietUntil == nil ? .seconds(20) : .milliseconds(500))
            if update == nil, quietUntil == nil { break }
            if let run = update?.run?.id, let seq = update?.transition?.seq { heard[run, default: []].append(seq) }
            if quietUntil == nil, runs.allSatisfy({ heard[$0]?.last == 3 }) { quietUntil = Date().addingTimeInterval(2.5) }
        }
        for run in runs { #expect(heard[run] == [1, 2, 3], "run \(run): heard seqs \(heard[run] ?? [])") }
    }

    /// The value of the series `series` (its name and labels as written) in an exposition text.
    static func sample(_ text: String, _ series: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test("a host alone notifies once another joins (its feed's greeting, not the next renewal): web-2 starts the follow-up web-1's end freed from web-1's NOTIFY")
    func joined() throws {
        let conninfo = try Postgres.server().database()
        let listener = try PGConnection(conninfo)
        try listener.execute("LISTEN baton")
        let gate = try FifoGate()
        let a = try Self.host("web-1", conninfo: conninfo, gate: gate)
        let first = try Self.incarnation(a, "web-1")
        try Self.untilRuns(a, first, notify: false, listener: listener)
        let b = try Self.host("web-2", conninfo: conninfo, gate: gate)
        let second = try Self.incarnation(b, "web-2")
        // web-1's next renewal is a minute away: only web-2's greeting tells it of company.
        try Self.untilRuns(a, first, notify: true, listener: listener)
        let running = try #require(try FleetTests.trigger(a, "gated").run?.id)
        let followUp = try FleetTests.trigger(b, "gated", policy: .queue)
        #expect(followUp.decision == .followUp)
        let next = try #require(followUp.run?.id)
        _ = try Self.heard(listener)
        gate.release()
        #expect(try FleetTests().waitUntilPhase(b, next, .loading), "web-2 never started run \(next) after run \(running)")
        let news = try Self.heard(listener)
        #expect(news.contains(first), "web-1's end of run \(running) notified nobody: \(news)")
        #expect(news.contains(second), "web-2's start of run \(next) notified nobody: \(news)")
        gate.release()
        #expect(try FleetTests.wait(a, run: next)?.phase == .success)
    }
}
