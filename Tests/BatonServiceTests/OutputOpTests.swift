import BatonCore
import BatonIPC
@testable import BatonService
import Foundation
import Testing

/// An exec runner whose one attempt says what the test tells it: output, then its end.
final class ScriptedRunner: Runner {
    private let events = Locked<(@Sendable (AttemptEvent) -> Void)?>(nil)
    private let started = Gate()

    final class Handle: Attempt { func stop(grace: Duration) {} }

    func start(_ job: Job, events: @escaping @Sendable (AttemptEvent) -> Void) -> any Attempt {
        self.events.withLock { $0 = events }
        events(.started(nil))
        started.open()
        return Handle()
    }

    /// Waits for the attempt to start, then writes `text` to `stream`.
    func write(_ text: String, to stream: StandardStream = .stdout) async {
        await started.wait()
        events.withLock { $0 }?(.output(stream, Array(text.utf8)))
    }

    func end() async {
        await started.wait()
        events.withLock { $0 }?(.ended(AttemptOutcome(result: .exited(status: 0, lastErrorLine: nil))))
    }
}

/// The history as the memory store's entries make it: runs, their phases and their output chunks.
final class JournalHistory: HistoryReader {
    let store: MemoryStore
    init(_ store: MemoryStore) { self.store = store }

    func run(_ id: Int64) async throws(BatonError) -> RunDetail? {
        var run: RunSnapshot?
        for entry in store.entries {
            if case let .created(snapshot, _) = entry, snapshot.id == id { run = snapshot }
            if case let .transition(transition) = entry, transition.runID == id { run?.phase = transition.to }
        }
        return run.map { RunDetail(run: $0, transitions: [], triggers: [], output: nil, outputTruncated: false) }
    }

    func output(of run: Int64, from offset: Int64, maxBytes: Int) async throws(BatonError) -> OutputPage? {
        var chunks: [Int64: OutputChunk] = [:]
        var last: OutputWrite?
        for case let .outputChunks(write) in store.entries where write.runID == run {
            if let before = write.removeBefore { chunks = chunks.filter { $0.value.start < write.head || $0.value.end > before } }
            for chunk in write.chunks { chunks[chunk.start] = chunk }
            last = write
        }
        guard let last else { return nil }
        let from = chunks.values.sorted { $0.start < $1.start }.filter { $0.end > offset }.map { chunk -> OutputChunk in
            var cut = chunk
            if cut.start < offset { cut.bytes.removeFirst(Int(offset - cut.start)); cut.start = offset }
            return cut
        }
        return OutputPage(chunks: Array(from.prefix(1)), total: last.total, dropped: last.dropped, head: last.head)
    }

    func runs(_ filter: HistoryFilter) async throws(BatonError) -> [RunSnapshot] {
        store.entries.compactMap { if case let .created(run, _) = $0, filter.actions.contains(run.action) { run } else { nil } }.reversed()
    }
    func stats(actions: [String], since: Timestamp?) async throws(BatonError) -> [ActionStats] { [] }
    func denied(limit: Int) async throws(BatonError) -> [TriggerRecord] { [] }
    func lastEnded() async throws(BatonError) -> [RunSnapshot] { [] }
    func recentDurations(of actions: [String]) async throws(BatonError) -> [String: [Int64]] { [:] }
}

/// The `output` op on a real conductor and a memory store, without a socket: the history's part
/// one chunk per page (so paging is exercised), then the live part, then the answer at the end.
@Suite("Service: output")
struct OutputOpTests {
    let runner = ScriptedRunner()
    let store = MemoryStore()
    let conductor: Conductor
    let service: Service

    init() {
        conductor = Conductor(actions: [Action(name: "talk", exec: ["talk"]), Action(name: "secret", exec: ["s"])], store: store,
                              options: Conductor.Options(execRunner: runner))
        var actions = conductor.configuredActions()
        for index in actions.indices where actions[index].name == "secret" { actions[index].allow = AccessPolicy.Override(read: .nobody) }
        service = Service(conductor: conductor, history: JournalHistory(store), journal: store,
                          generation: Generation(actions: actions, access: AccessPolicy(trigger: .anyone, cancel: .anyone, read: .anyone), owner: 0),
                          hooks: Service.Hooks(reload: { _ in .applied(warnings: []) }, prune: { dryRun throws(BatonError) in PruneReport(dryRun: dryRun) }), reactor: conductor.reactor)
    }

    func ask(_ json: String, _ caller: Recorder) { service.receivedOnLoop(.line(Array(json.utf8)), from: caller) }

    /// The chunks' text up to the final answer, and the answer.
    func collect(_ caller: Recorder, until text: String? = nil) async -> (text: String, answer: Response?) {
        var got = ""
        while let line = await caller.next() {
            if let chunk = line.chunk { got += String(decoding: chunk.bytes, as: UTF8.self) }
            if line.event == nil { return (got, line) }
            if let text, got == text { return (got, nil) }
        }
        return (got, nil)
    }

    func detachTalk() async {
        let trigger = Recorder(uid: 0)
        ask(#"{"op":"trigger","action":"talk","detach":true}"#, trigger)
        _ = await trigger.answer()
    }

    @Test("a long history is sent a page at a time: the next page only once the client has taken the last (flow control, not a drop)")
    func flowControl() async throws {
        await detachTalk()
        // Alternate streams: three chunks, which the history gives one per page.
        await runner.write("a")
        await runner.write("b", to: .stderr)
        await runner.write("c")
        await runner.end()
        // The history has all of it once the run's end is durable.
        let waiter = Recorder(uid: 0)
        ask(#"{"id":2,"op":"wait","run":1}"#, waiter)
        #expect(await waiter.answer()?.run?.phase == .success)
        let reader = Recorder(uid: 0)
        reader.holdDrains()
        ask(#"{"id":1,"op":"output","action":"talk"}"#, reader)
        let first = await reader.next()
        #expect(first?.chunk.map { String(decoding: $0.bytes, as: UTF8.self) } == "a")
        // The relay now waits for the client: nothing more is sent until the output drains.
        var turns = 0
        while reader.drainWaiters == 0 && turns < 100_000 {
            await Task.yield()
            turns += 1
        }
        #expect(reader.drainWaiters == 1)
        #expect(reader.sentCount == 1)
        reader.releaseDrains()
        let rest = await collect(reader)
        #expect(rest.text == "bc" && rest.answer?.outputEnd == 3, "\(rest)")
    }

    @Test("follow: what the history has, then what comes meanwhile, each byte once, then the run's end and where the output ends")
    func follow() async throws {
        await detachTalk()
        await runner.write("one ")
        await runner.write("two ", to: .stderr)
        let follower = Recorder(uid: 0)
        ask(#"{"id":1,"op":"output","action":"talk","follow":true}"#, follower)
        await runner.write("three")
        await runner.end()
        let end = await collect(follower)
        #expect(end.text == "one two three")
        #expect(follower.streaming)
        let answer = try #require(end.answer)
        #expect(answer.ok == true && answer.run?.phase == .success && answer.outputEnd == 13, "\(answer)")
    }

    @Test("follow: a chunk written while the run is followed goes out before the run ends")
    func live() async throws {
        await detachTalk()
        await runner.write("first")
        let follower = Recorder(uid: 0)
        ask(#"{"op":"output","run":1,"follow":true}"#, follower)
        #expect(await collect(follower, until: "first").text == "first")
        await runner.write(" then")
        #expect(await collect(follower, until: " then").text == " then")
        await runner.end()
        #expect(await collect(follower).answer?.outputEnd == 10)
    }

    @Test("from an offset: no byte before it, none twice; an ended run's output comes from the history alone")
    func resume() async throws {
        await detachTalk()
        await runner.write("abc")
        await runner.write("def")
        let follower = Recorder(uid: 0)
        ask(#"{"op":"output","run":1,"from":2,"follow":true}"#, follower)
        #expect(await collect(follower, until: "cdef").text == "cdef")
        await runner.end()
        #expect(await collect(follower).answer?.outputEnd == 6)
        let later = Recorder(uid: 0)
        ask(#"{"op":"output","run":1,"from":4,"follow":true}"#, later)
        let rest = await collect(later)
        #expect(rest.text == "ef" && rest.answer?.outputEnd == 6 && rest.answer?.outputDropped == 0)
    }

    /// Issue 37, item 1: a follower that never read held every live byte of the run while its
    /// history waited for it (1 GB of output: 825 MiB of batond).
    @Test("a follower that stops reading: live output held for it counts against its limit, it is closed there, and nothing more is held")
    func unreadFollower() async throws {
        await detachTalk()
        await runner.write("history")
        let follower = Recorder(uid: 0)
        follower.holdDrains()
        follower.holdLimit = 256 << 10
        ask(#"{"op":"output","action":"talk","follow":true}"#, follower)
        #expect(await collect(follower, until: "history").text == "history")
        // The relay waits for the client to take the history's page: live chunks are held meanwhile.
        var turns = 0
        while follower.drainWaiters == 0 && turns < 100_000 {
            await Task.yield()
            turns += 1
        }
        let chunk = String(repeating: "x", count: 16 << 10)
        for _ in 0..<64 { await runner.write(chunk) }
        turns = 0
        while !follower.isClosed && turns < 1_000_000 {
            await Task.yield()
            turns += 1
        }
        #expect(follower.isClosed, "the follower was never closed: \(follower.held)")
        #expect(follower.held.most <= (256 + 16) << 10, "\(follower.held)")
        // Once closed, later chunks are not held for it.
        let calls = follower.held.calls
        for _ in 0..<8 { await runner.write(chunk) }
        await runner.end()
        let waiter = Recorder(uid: 0)
        ask(#"{"op":"wait","run":1}"#, waiter)
        #expect(await waiter.answer()?.run?.phase == .success)
        #expect(follower.held.calls == calls)
        follower.releaseDrains()
    }

    @Test("refused: no run or action, an unknown run, a run the peer may not read")
    func refused() async throws {
        let caller = Recorder(uid: 1_000)
        ask(#"{"op":"output"}"#, caller)
        #expect(await caller.answer()?.error?.code == .badRequest)
        ask(#"{"op":"output","run":99}"#, caller)
        #expect(await caller.answer()?.error?.code == .unknownRun)
        let trigger = Recorder(uid: 0)
        ask(#"{"op":"trigger","action":"secret","detach":true}"#, trigger)
        _ = await trigger.answer()
        ask(#"{"op":"output","action":"secret"}"#, caller)
        #expect(await caller.answer()?.error?.code == .forbidden)
        await runner.end()
    }
}
