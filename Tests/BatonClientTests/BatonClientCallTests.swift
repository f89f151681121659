import BatonClient
import BatonCore
import Foundation
import Testing

/// The calls the CLI needs beyond run and status, over a fake transport: output followed as an
/// `AsyncSequence`, detached triggers, cancelled outcomes returned, wait's updates, watch's start,
/// and the admin calls.
@Suite("BatonClient: output, detach, wait, watch and admin calls over a fake transport")
struct BatonClientCallTests {
    static func chunk(_ request: Request?, start: Int64, _ text: String, stream: StandardStream = .stdout) -> Response {
        var response = Response(id: request?.id, ok: nil)
        response.event = "output"
        response.chunk = OutputChunk(start: start, stream: stream, at: Timestamp(rawValue: 5), bytes: Array(text.utf8))
        return response
    }

    @Test("output sends run, from and follow, yields each chunk in order, then ends with the run and where the output ends")
    func outputChunks() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let output = client.output(run: 7, from: 3, follow: true)
        let request = try #require(await fake.nextRequest())
        #expect(request.op == .output && request.run == 7 && request.from == 3 && request.follow == true)
        fake.answer(Self.chunk(request, start: 3, "lo\n"))
        fake.answer(Self.chunk(request, start: 6, "oops\n", stream: .stderr))
        var end = Response(id: request.id)
        end.run = BatonClientTests.run(7, .success)
        end.outputEnd = 11
        end.outputDropped = 0
        fake.answer(end)
        var seen: [String] = []
        for try await chunk in output.chunks { seen.append("\(chunk.start) \(chunk.stream.rawValue) \(String(decoding: chunk.bytes, as: UTF8.self))") }
        #expect(seen == ["3 stdout lo\n", "6 stderr oops\n"])
        #expect(try await output.end == OutputEnd(run: BatonClientTests.run(7, .success), position: 11, dropped: 0))
    }

    @Test("a refused output throws its error from chunks and end; a lost connection throws unavailable after the chunks that came")
    func outputErrors() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let refused = client.output(run: 9)
        let request = try #require(await fake.nextRequest())
        fake.deliver(Array(#"{"id":\#(Self.number(request)),"ok":false,"error":{"code":"unknown_run","message":"no run 9"}}"#.utf8))
        await #expect(throws: BatonClientError.unknownRun("no run 9")) { for try await _ in refused.chunks {} }
        await #expect(throws: BatonClientError.unknownRun("no run 9")) { try await refused.end }

        let followed = client.output(run: 4, follow: true)
        let second = try #require(await fake.nextRequest())
        fake.answer(Self.chunk(second, start: 0, "a"))
        fake.end("lost batond at fake: batond closed the connection before answering")
        var starts: [Int64] = []
        await #expect(throws: BatonClientError.unavailable("lost batond at fake: batond closed the connection before answering")) {
            for try await chunk in followed.chunks { starts.append(chunk.start) }
        }
        #expect(starts == [0])
    }

    @Test("leave ends the output request: chunks and end throw CancellationError, nothing is sent, and later calls go on")
    func outputLeave() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let output = client.output(run: 4, follow: true)
        let request = try #require(await fake.nextRequest())
        fake.answer(Self.chunk(request, start: 0, "first"))
        output.leave()
        await #expect(throws: CancellationError.self) { for try await _ in output.chunks {} }
        await #expect(throws: CancellationError.self) { try await output.end }
        let version = Task { try await client.version() }
        let ping = try #require(await fake.nextRequest())
        #expect(ping.op == .ping)
        var pong = Response(id: ping.id)
        pong.version = "1"
        fake.answer(pong)
        #expect(try await version.value == "1")
    }

    @Test("detach sends detach and force and returns the queued run with the decision; a cooled answer carries the cooldown")
    func detach() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let queued = Task { try await client.detach("deploy", params: ["env": "prod"], policy: .queue, force: true) }
        let request = try #require(await fake.nextRequest())
        #expect(request.op == .trigger && request.detach == true && request.force == true && request.policy == .queue)
        var answer = BatonClientTests.final(request, BatonClientTests.run(8, .queued), decision: .followUp)
        answer.cooldown = nil
        fake.answer(answer)
        #expect(try await queued.value == RunOutcome(run: BatonClientTests.run(8, .queued), decision: .followUp, shared: false))

        let cooled = Task { try await client.run("deploy") }
        let second = try #require(await fake.nextRequest())
        #expect(second.force == nil && second.detach == nil)
        var inside = BatonClientTests.final(second, BatonClientTests.run(5, .success), decision: .cooled)
        inside.cooldown = 600_000_000
        fake.answer(inside)
        #expect(try await cooled.value.cooldown == 600_000_000)
    }

    @Test("with throwingOnCancel false a cancelled run is returned as an outcome, with its decision and shared")
    func cancelledReturned() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let handle = client.trigger("deploy", throwingOnCancel: false)
        let request = try #require(await fake.nextRequest())
        fake.answer(BatonClientTests.final(request, BatonClientTests.run(2, .cancelled, cancelledBy: 0), decision: .joined, shared: true))
        #expect(try await handle.outcome == RunOutcome(run: BatonClientTests.run(2, .cancelled, cancelledBy: 0), decision: .joined, shared: true))
    }

    @Test("wait passes each update to its closure before it returns the ended run")
    func waitUpdates() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let seen = Locked<[Phase]>([])
        let waited = Task { try await client.wait(run: 6) { update in seen.withLock { $0.append(update.run.phase) } } }
        let request = try #require(await fake.nextRequest())
        #expect(request.op == .wait && request.run == 6)
        fake.answer(.update(request.id, RunUpdate(run: BatonClientTests.run(6, .loading), transition: nil)))
        var end = Response(id: request.id)
        end.run = BatonClientTests.run(6, .success)
        fake.answer(end)
        #expect(try await waited.value.phase == .success)
        #expect(seen.withLock { $0 } == [.loading])
    }

    @Test("watch calls started once batond's watching event comes, before any update")
    func watchStarted() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let (started, didStart) = AsyncStream<Void>.makeStream()
        let watch = client.watch(action: "deploy") { didStart.yield() }
        let request = try #require(await fake.nextRequest())
        var watching = Response(id: request.id, ok: nil)
        watching.event = "watching"
        fake.answer(watching)
        for await _ in started { break }
        fake.answer(.update(request.id, RunUpdate(run: BatonClientTests.run(3, .loading), transition: nil)))
        for try await update in watch {
            #expect(update.run.id == 3)
            break
        }
    }

    @Test("actions, stats, denied, metrics, prune and reload send their op and return what the answer carries")
    func adminCalls() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let metrics = Task { try await client.metrics() }
        let metricsRequest = try #require(await fake.nextRequest())
        #expect(metricsRequest.op == .metrics)
        var answer = Response(id: metricsRequest.id)
        answer.metrics = "baton_runs_total 1\n"
        fake.answer(answer)
        #expect(try await metrics.value == "baton_runs_total 1\n")

        let prune = Task { try await client.prune(dryRun: true) }
        let pruneRequest = try #require(await fake.nextRequest())
        #expect(pruneRequest.op == .prune && pruneRequest.dryRun == true)
        fake.answer(Response(id: pruneRequest.id))
        #expect(try await prune.value == PruneReport(dryRun: true))

        let stats = Task { try await client.stats(HistoryFilter(actions: ["deploy"])) }
        let statsRequest = try #require(await fake.nextRequest())
        #expect(statsRequest.op == .stats && statsRequest.filter?.actions == ["deploy"])
        fake.answer(Response(id: statsRequest.id))
        #expect(try await stats.value.isEmpty)

        let denied = Task { try await client.denied(limit: 5) }
        let deniedRequest = try #require(await fake.nextRequest())
        #expect(deniedRequest.op == .denied && deniedRequest.filter?.limit == 5)
        fake.deliver(Array(#"{"id":\#(Self.number(deniedRequest)),"ok":false,"error":{"code":"forbidden","message":"root only"}}"#.utf8))
        await #expect(throws: BatonClientError.forbidden("root only")) { try await denied.value }

        let reload = Task { try await client.reload() }
        let reloadRequest = try #require(await fake.nextRequest())
        #expect(reloadRequest.op == .reload)
        fake.deliver(Array(#"{"id":\#(Self.number(reloadRequest)),"ok":false,"error":{"code":"bad_request","message":"timeout: expected a duration"}}"#.utf8))
        await #expect(throws: BatonClientError.badRequest("timeout: expected a duration")) { try await reload.value }

        let actions = Task { try await client.actions() }
        let actionsRequest = try #require(await fake.nextRequest())
        #expect(actionsRequest.op == .actions)
        fake.answer(Response(id: actionsRequest.id))
        #expect(try await actions.value.isEmpty)
    }

    /// A page of a long history: a `runs` event, or (`final`) the final answer.
    static func page(_ request: Request, _ ids: ClosedRange<Int64>, final: Bool = false) -> Response {
        var response = Response(id: request.id, ok: final ? true : nil)
        response.event = final ? nil : "runs"
        response.runs = ids.reversed().map { BatonClientTests.run($0, .success) }
        return response
    }

    @Test("history gathers a long answer's runs events and its final answer into one list, in order; other events are passed over")
    func historyPages() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let history = Task { try await client.history(HistoryFilter(limit: 1_200)) }
        let request = try #require(await fake.nextRequest())
        #expect(request.op == .history && request.filter?.limit == 1_200)
        fake.answer(Self.page(request, 701...1_200))
        fake.answer(Self.chunk(request, start: 0, "not a page"))
        fake.answer(Self.page(request, 201...700))
        fake.answer(Self.page(request, 1...200, final: true))
        #expect(try await history.value.map(\.id) == Array((1...1_200).reversed()))
    }

    static func number(_ request: Request) -> Int64 {
        if case let .number(id)? = request.id { return id }
        return -1
    }
}
