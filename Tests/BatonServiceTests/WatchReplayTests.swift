import BatonCore
@testable import BatonService
import Testing

/// `watch` with `after`: what was committed after the cursor first, then the live updates, each
/// transition once (WatchRelay).
@Suite("Watch replay")
struct WatchReplayTests {
    static func update(_ run: Int64, _ action: String, _ seq: Int, _ to: Phase, at: Int64) -> RunUpdate {
        let snapshot = RunSnapshot(id: run, action: action, key: action, phase: to, policy: .reject, params: [:], trigger: nil,
                                   queuedAt: Timestamp(rawValue: at))
        return RunUpdate(run: snapshot, transition: Transition(runID: run, seq: seq, from: seq == 1 ? nil : .queued, to: to, at: Timestamp(rawValue: at)))
    }

    static func key(_ response: Response) -> String {
        guard let t = response.transition else { return response.event ?? "answer" }
        return "\(t.runID).\(t.seq)"
    }

    @Test("the replay goes out after watching, live updates held meanwhile follow it, none twice, none the peer may not read")
    func replayThenLive() async throws {
        let fixture = Fixture()
        let gate = Gate()
        fixture.history.replayGate.withLock { $0 = gate }
        let alice = Recorder(uid: Fixture.alice), presser = Recorder(uid: Fixture.alice)
        fixture.service.receivedOnLoop(.line(Array(#"{"id":1,"op":"watch","after":{"at":5,"run":800,"seq":3}}"#.utf8)), from: alice)
        // While the replay is read, a run is triggered and ends: its updates are held.
        let answer = try #require(await fixture.ask(#"{"id":2,"op":"trigger","action":"deploy","params":{"env":"staging"}}"#, as: presser))
        let run = try #require(answer.run).id
        #expect(answer.run?.phase == .success)
        #expect(alice.sentCount == 0, "nothing before the replay is read")
        // The history had the run's first transition (committed before the replay read, told late),
        // two of another run, and one of an action alice may not read.
        fixture.history.replay.withLock {
            $0 = Replay(updates: [Self.update(900, "deploy", 1, .queued, at: 6), Self.update(901, "secret", 1, .queued, at: 7),
                                  Self.update(900, "deploy", 2, .loading, at: 8), Self.update(run, "deploy", 1, .queued, at: 9)],
                        skipped: 3)
        }
        gate.open()
        let watching = try #require(await alice.next())
        #expect(watching.event == "watching" && watching.skipped == 3)
        var keys: [String] = []
        for _ in 0..<5 { keys.append(Self.key(try #require(await alice.next()))) }
        #expect(keys == ["900.1", "900.2", "\(run).1", "\(run).2", "\(run).3"])
        // Live from now on, and the next run's first update is the next line: nothing came twice.
        let next = try #require(await fixture.ask(#"{"id":3,"op":"trigger","action":"deploy","params":{"env":"staging"}}"#, as: presser))
        let after = try #require(await alice.next())
        #expect(Self.key(after) == "\(try #require(next.run).id).1")
        #expect(fixture.history.cursors.withLock { $0 } == [WatchCursor(at: Timestamp(rawValue: 5), run: 800, seq: 3)])
        #expect(alice.held.now == 0, "what was held is counted back")
        #expect(alice.held.most > 0, "held updates count against the client's unsent output")
    }

    @Test("a long replay goes a page at a time, each once the client has read the last")
    func paged() async throws {
        let fixture = Fixture()
        let count = WatchRelay.page * 2 + 10
        fixture.history.replay.withLock { $0 = Replay(updates: (1...count).map { Self.update(Int64($0), "deploy", 1, .queued, at: Int64($0)) }) }
        let alice = Recorder(uid: Fixture.alice)
        alice.holdDrains()
        fixture.service.receivedOnLoop(.line(Array(#"{"id":1,"op":"watch","after":{"at":0,"run":0,"seq":0}}"#.utf8)), from: alice)
        #expect(try #require(await alice.next()).event == "watching")
        var seen: [Int64] = []
        for _ in 0..<WatchRelay.page { seen.append(try #require(await alice.next()).transition?.runID ?? -1) }
        await fixture.conductor.ping()
        #expect(alice.sentCount == 1 + WatchRelay.page, "the second page waits for the client")
        alice.releaseDrains()
        for _ in WatchRelay.page..<count { seen.append(try #require(await alice.next()).transition?.runID ?? -1) }
        #expect(seen == (1...count).map(Int64.init))
    }

    @Test("a watch without after has no replay: watching at once")
    func plain() async throws {
        let fixture = Fixture()
        let gate = Gate()
        fixture.history.replayGate.withLock { $0 = gate }
        defer { gate.open() }
        let alice = Recorder(uid: Fixture.alice)
        fixture.service.receivedOnLoop(.line(Array(#"{"id":1,"op":"watch"}"#.utf8)), from: alice)
        let watching = try #require(await alice.next())
        #expect(watching.event == "watching" && watching.skipped == nil)
        #expect(fixture.history.cursors.withLock { $0 }.isEmpty)
    }
}
