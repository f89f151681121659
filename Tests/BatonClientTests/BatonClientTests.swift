import BatonClient
import BatonCore
import Foundation
import Testing

/// The client over a fake transport: what it sends, how it reads answers and errors, many
/// requests on one connection, leaving, and a lost connection.
@Suite("BatonClient over a fake transport")
struct BatonClientTests {
    static func run(_ id: Int64, _ phase: Phase, cancelledBy: UInt32? = nil) -> RunSnapshot {
        var run = RunSnapshot(id: id, action: "deploy", key: "deploy", phase: phase, policy: .join, params: [:],
                              trigger: nil, queuedAt: Timestamp(rawValue: 1_000))
        run.cancelledBy = cancelledBy
        if phase == .failure { run.error = "exited with status 3" }
        return run
    }

    static func final(_ request: Request?, _ run: RunSnapshot, decision: TriggerDecision = .created, shared: Bool = false) -> Response {
        var response = Response(id: request?.id)
        response.run = run
        response.decision = decision
        response.shared = shared
        return response
    }

    @Test("run sends a trigger with its action, params and policy, and returns the outcome the final answer carries")
    func runOutcome() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let outcome = Task { try await client.run("deploy", params: ["env": "prod"], policy: .join) }
        let request = try #require(await fake.nextRequest())
        #expect(request.op == .trigger && request.action == "deploy" && request.params == ["env": "prod"] && request.policy == .join)
        #expect(request.detach == nil)
        fake.answer(Self.final(request, Self.run(7, .success), decision: .joined, shared: true))
        #expect(try await outcome.value == RunOutcome(run: Self.run(7, .success), decision: .joined, shared: true))
    }

    static let refusals: [(String, BatonClientError)] = [
        (#"{"code":"busy","message":"deploy is busy","run":42,"since":1795991711000000}"#,
         .busy(run: 42, since: Timestamp(rawValue: 1_795_991_711_000_000), message: "deploy is busy")),
        (#"{"code":"busy","message":"deploy is busy: another definition","run":42}"#, .busy(run: 42, since: nil, message: "deploy is busy: another definition")),
        (#"{"code":"forbidden","message":"you may not trigger deploy"}"#, .forbidden("you may not trigger deploy")),
        (#"{"code":"unknown_action","message":"unknown action nope"}"#, .unknownAction("unknown action nope")),
        (#"{"code":"bad_request","message":"param env: \"dev\" does not match ^prod$","param":"env"}"#,
         .badParam(name: "env", reason: #"param env: "dev" does not match ^prod$"#)),
        (#"{"code":"bad_request","message":"action deploy does not allow policy replace"}"#, .badRequest("action deploy does not allow policy replace")),
        (#"{"code":"shutting_down","message":"batond is shutting down"}"#, .shuttingDown("batond is shutting down")),
        (#"{"code":"store_unavailable","message":"disk full"}"#, .storeUnavailable("disk full")),
        (#"{"code":"a_code_from_tomorrow","message":"new"}"#, .internal("new")),
    ]

    @Test("each refusal on the wire becomes its typed error, with the run, since and param batond names", arguments: refusals)
    func refusal(error: String, expected: BatonClientError) async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let outcome = Task { try await client.run("deploy") }
        let request = try #require(await fake.nextRequest())
        guard case let .number(id)? = request.id else { Issue.record("no id"); return }
        fake.deliver(Array(#"{"id":\#(id),"ok":false,"error":\#(error)}"#.utf8))
        await #expect(throws: expected) { try await outcome.value }
    }

    @Test("a run that ended cancelled throws cancelled(by:); a failure returns, or throws failed when asked")
    func endings() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let cancelled = Task { try await client.run("deploy") }
        fake.answer(Self.final(await fake.nextRequest(), Self.run(1, .cancelled, cancelledBy: 1000)))
        await #expect(throws: BatonClientError.cancelled(by: 1000, run: Self.run(1, .cancelled, cancelledBy: 1000))) { try await cancelled.value }

        let failed = Task { try await client.run("deploy") }
        fake.answer(Self.final(await fake.nextRequest(), Self.run(2, .failure)))
        #expect(try await failed.value.phase == .failure)

        let thrown = Task { try await client.run("deploy", throwingOnFailure: true) }
        fake.answer(Self.final(await fake.nextRequest(), Self.run(3, .failure)))
        await #expect(throws: BatonClientError.failed(RunOutcome(run: Self.run(3, .failure), decision: .created, shared: false))) { try await thrown.value }
    }

    @Test("requests on one connection are answered out of order, each with its own answer, and the connection starts once")
    func multiplexing() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let first = Task { try await client.show(5) }
        let showRequest = try #require(await fake.nextRequest())
        let second = Task { try await client.history(HistoryFilter(actions: ["deploy"], limit: 3)) }
        let historyRequest = try #require(await fake.nextRequest())
        #expect(showRequest.id != historyRequest.id)
        #expect(historyRequest.filter == HistoryFilter(actions: ["deploy"], limit: 3))
        var history = Response(id: historyRequest.id)
        history.runs = [Self.run(9, .success), Self.run(8, .failure)]
        fake.answer(history)
        #expect(try await second.value.map(\.id) == [9, 8])
        var show = Response(id: showRequest.id)
        show.detail = RunDetail(run: Self.run(5, .success), transitions: [], triggers: [], output: Data("hi".utf8), outputTruncated: false)
        fake.answer(show)
        #expect(try await first.value.output == Data("hi".utf8))
        #expect(fake.starts == 1)
    }

    @Test("a trigger's handle yields its updates in order, then the run as it ended; the outcome follows")
    func handleUpdates() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let handle = client.trigger("deploy")
        let request = try #require(await fake.nextRequest())
        for (seq, phase) in [Phase.queued, .loading].enumerated() {
            fake.answer(.update(request.id, RunUpdate(run: Self.run(4, phase), transition:
                Transition(runID: 4, seq: seq + 1, from: seq == 0 ? nil : .queued, to: phase, at: Timestamp(rawValue: 2_000)))))
        }
        fake.answer(.update(request.id, RunUpdate(run: Self.run(4, .loading), transition: nil)))
        fake.answer(Self.final(request, Self.run(4, .success)))
        var seen: [String] = []
        for try await update in handle.updates { seen.append("\(update.run.phase.rawValue) \(update.transition?.seq ?? 0)") }
        #expect(seen == ["queued 1", "loading 2", "loading 0", "success 0"])
        #expect(try await handle.outcome.run.id == 4)
    }

    @Test("cancelling the waiting task leaves the run: CancellationError, and nothing but the trigger is sent")
    func cancellationLeaves() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let task = Task { try await client.run("deploy") }
        let request = try #require(await fake.nextRequest())
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        // The answer of the left request is dropped; the next request is the next one sent.
        fake.answer(Self.final(request, Self.run(1, .success)))
        let version = Task { try await client.version() }
        let ping = try #require(await fake.nextRequest())
        #expect(ping.op == .ping)
        var pong = Response(id: ping.id)
        pong.version = "1.2.3"
        fake.answer(pong)
        #expect(try await version.value == "1.2.3")
    }

    @Test("leaving a handle ends its updates and outcome with CancellationError and sends nothing; cancel(run:) is the explicit stop")
    func handleLeave() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let handle = client.trigger("deploy")
        let trigger = try #require(await fake.nextRequest())
        handle.leave()
        await #expect(throws: CancellationError.self) { try await handle.outcome }
        await #expect(throws: CancellationError.self) { for try await _ in handle.updates {} }
        fake.answer(Self.final(trigger, Self.run(6, .success)))
        let cancel = Task { try await client.cancel(run: 6) }
        let request = try #require(await fake.nextRequest())
        #expect(request.op == .cancel && request.run == 6)
        var answer = Response(id: request.id)
        answer.runs = [Self.run(6, .cancelled, cancelledBy: 0)]
        fake.answer(answer)
        #expect(try await cancel.value.map(\.phase) == [.cancelled])
    }

    @Test("a lost connection throws unavailable to every waiting call, handle and watch, and to later calls at once")
    func lostConnection() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let run = Task { try await client.run("deploy") }
        _ = await fake.nextRequest()
        let handle = client.trigger("deploy")
        _ = await fake.nextRequest()
        let watch = client.watch()
        _ = await fake.nextRequest()
        fake.end("batond closed the connection")
        let expected = BatonClientError.unavailable("batond closed the connection")
        await #expect(throws: expected) { try await run.value }
        await #expect(throws: expected) { try await handle.outcome }
        await #expect(throws: expected) { for try await _ in handle.updates {} }
        await #expect(throws: expected) { for try await _ in watch {} }
        await #expect(throws: expected) { try await client.status() }
    }

    @Test("a line the client cannot read ends the connection with unavailable instead of leaving a call waiting")
    func unreadableLine() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let status = Task { try await client.status() }
        _ = await fake.nextRequest()
        fake.deliver(Array(#"{"id":1,"ok":tru"#.utf8))
        await #expect(throws: BatonClientError.unavailable(#"batond sent a line this client cannot read: {"id":1,"ok":tru"#)) { try await status.value }
    }

    @Test("a watch yields the updates, not the watching event, and ends its request when the iteration stops")
    func watch() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let watch = client.watch(action: "deploy", progress: true)
        let request = try #require(await fake.nextRequest())
        #expect(request.op == .watch && request.action == "deploy" && request.progress == true)
        var watching = Response(id: request.id, ok: nil)
        watching.event = "watching"
        fake.answer(watching)
        fake.answer(.update(request.id, RunUpdate(run: Self.run(3, .loading), transition: nil)))
        for try await update in watch {
            #expect(update.run.id == 3)
            break
        }
    }
}
