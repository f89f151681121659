import BatonCore
@testable import BatonService
import Foundation
import Testing

/// The request logic with no socket and no process: who may do what, each operation, and how
/// every error becomes a wire code, as tables over a recorder in place of a connection.
@Suite("Service")
struct ServiceTests {
    typealias F = Fixture

    struct Row: CustomTestStringConvertible, Sendable {
        var name: String
        var uid: UInt32
        var gid: UInt32? = nil
        var request: String
        /// nil: the answer is ok.
        var error: ErrorCode?
        var message: String? = nil
        var testDescription: String { name }
    }

    static let access: [Row] = [
        Row(name: "alice may trigger deploy", uid: F.alice, request: #"{"id":1,"op":"trigger","action":"deploy","params":{"env":"prod"}}"#, error: nil),
        Row(name: "a member of ops may trigger deploy", uid: F.bob, gid: F.ops, request: #"{"op":"trigger","action":"deploy","params":{"env":"prod"}}"#, error: nil),
        Row(name: "bob may not trigger deploy, and is told who and what", uid: F.bob,
            request: #"{"op":"trigger","action":"deploy","params":{"env":"prod"}}"#, error: .forbidden, message: "uid 60002 may not trigger deploy"),
        Row(name: "root may do anything", uid: 0, request: #"{"op":"trigger","action":"deploy","params":{"env":"prod"}}"#, error: nil),
        Row(name: "alice may not cancel deploy (cancel is ops')", uid: F.alice, request: #"{"op":"cancel","action":"deploy"}"#,
            error: .forbidden, message: "uid 60001 may not cancel deploy"),
        Row(name: "ops may cancel deploy (nothing in flight: an empty answer)", uid: F.bob, gid: F.ops, request: #"{"op":"cancel","action":"deploy"}"#, error: nil),
        Row(name: "nobody but root reads secret's run", uid: F.alice, request: #"{"op":"show","run":7}"#, error: .forbidden,
            message: "uid 60001 may not read secret"),
        Row(name: "reload is the admin's", uid: F.alice, request: #"{"op":"reload"}"#, error: .forbidden),
        Row(name: "prune is the admin's", uid: F.alice, request: #"{"op":"prune","dryRun":true}"#, error: .forbidden),
        Row(name: "the denied list is the admin's", uid: F.alice, request: #"{"op":"denied"}"#, error: .forbidden),
        Row(name: "root prunes", uid: 0, request: #"{"op":"prune","dryRun":true}"#, error: nil),
        Row(name: "a reload refused by the daemon says why", uid: 0, request: #"{"op":"reload"}"#, error: .badRequest,
            message: "reloads are refused in this test"),
    ]

    static let operations: [Row] = [
        Row(name: "ping", uid: F.alice, request: #"{"id":"p","op":"ping"}"#, error: nil),
        Row(name: "an unknown action", uid: F.alice, request: #"{"op":"trigger","action":"nope"}"#, error: .unknownAction, message: #"unknown action "nope""#),
        Row(name: "a param that fails its pattern", uid: F.alice, request: #"{"op":"trigger","action":"deploy","params":{"env":"qa"}}"#,
            error: .badRequest, message: #"param env: "qa" does not match ^(staging|prod)$"#),
        Row(name: "a missing param", uid: F.alice, request: #"{"op":"trigger","action":"deploy"}"#, error: .badRequest,
            message: "param env is required by action deploy"),
        Row(name: "no such run to show", uid: F.alice, request: #"{"op":"show","run":99}"#, error: .unknownRun, message: "no run 99"),
        Row(name: "not JSON", uid: F.alice, request: "{op", error: .badRequest),
        Row(name: "an unknown op", uid: F.alice, request: #"{"id":5,"op":"dance"}"#, error: .badRequest),
        Row(name: "a filter past its caps", uid: F.alice, request: #"{"op":"history","filter":{"limit":-1}}"#, error: .badRequest),
        Row(name: "history", uid: F.alice, request: #"{"op":"history"}"#, error: nil),
        Row(name: "stats", uid: F.alice, request: #"{"op":"stats"}"#, error: nil),
        Row(name: "metrics", uid: F.alice, request: #"{"op":"metrics"}"#, error: nil),
        Row(name: "actions", uid: F.alice, request: #"{"op":"actions"}"#, error: nil),
    ]

    @Test("access: each op refused or served by who asks", arguments: access)
    func accessDecisions(_ row: Row) async throws {
        try await check(row)
    }

    @Test("operations: answers and errors, each with its wire code", arguments: operations)
    func operation(_ row: Row) async throws {
        try await check(row)
    }

    func check(_ row: Row) async throws {
        let fixture = Fixture()
        fixture.history.details.withLock { $0[7] = RunDetail(run: RunSnapshot(id: 7, action: "secret", key: "secret", phase: .success,
                                                                             policy: .reject, params: [:], trigger: nil, queuedAt: Timestamp(microseconds: 0)),
                                                             transitions: [], triggers: [], output: nil, outputTruncated: false) }
        let caller = Recorder(uid: row.uid, gid: row.gid)
        let answer = try #require(await fixture.ask(row.request, as: caller))
        #expect(answer.error?.code == row.error, "\(String(describing: answer.error))")
        if let message = row.message { #expect(answer.error?.message == message) }
        #expect(caller.ended == 1, "every request is ended exactly once")
    }

    @Test("the id of a request comes back with its answer, even when the line is not a valid request")
    func ids() async throws {
        let fixture = Fixture()
        let caller = Recorder(uid: F.alice)
        #expect(try #require(await fixture.ask(#"{"id":"x1","op":"ping"}"#, as: caller)).id == .text("x1"))
        #expect(try #require(await fixture.ask(#"{"id":7,"op":"dance"}"#, as: caller)).id == .number(7))
    }

    @Test("reject: a second trigger while a run is in flight is busy, naming the run; cancel ends it; the first caller hears the end")
    func rejectAndCancel() async throws {
        let fixture = Fixture()
        let first = Recorder(uid: F.alice), second = Recorder(uid: F.alice)
        fixture.service.receivedOnLoop(.line(Array(#"{"op":"trigger","action":"hold"}"#.utf8)), from: first)
        let loading = try #require(await first.next())
        #expect(loading.event != nil && loading.run?.phase != nil)
        let busy = try #require(await fixture.ask(#"{"op":"trigger","action":"hold"}"#, as: second))
        #expect(busy.error?.code == .busy && busy.error?.run == loading.run?.id)
        let cancelled = try #require(await fixture.ask(#"{"op":"cancel","action":"hold"}"#, as: second))
        #expect(cancelled.runs?.map(\.id) == [loading.run?.id].compactMap { $0 })
        let end = try #require(await first.answer())
        #expect(end.run?.phase == .cancelled)
        fixture.gate.open()
    }

    @Test("join shares one run among callers; detach answers at once with the run")
    func join() async throws {
        let fixture = Fixture()
        let a = Recorder(uid: 0), b = Recorder(uid: 0)
        let detached = try #require(await fixture.ask(#"{"op":"trigger","action":"hold","detach":true}"#, as: a))
        let id = try #require(detached.run?.id)
        fixture.service.receivedOnLoop(.line(Array(#"{"op":"trigger","action":"hold","policy":"join"}"#.utf8)), from: b)
        _ = await b.next()
        fixture.service.receivedOnLoop(.line(Array(#"{"op":"wait","run":\#(id)}"#.utf8)), from: a)
        fixture.gate.open()
        let joined = try #require(await b.answer())
        #expect(joined.run?.id == id && joined.shared == true && joined.run?.phase == .success)
        #expect(try #require(await a.answer()).run?.phase == .success)
    }

    @Test("watch streams committed transitions and marks the caller as streaming; a closed caller's watch stops")
    func watch() async throws {
        let fixture = Fixture()
        let watcher = Recorder(uid: F.alice)
        fixture.service.receivedOnLoop(.line(Array(#"{"op":"watch"}"#.utf8)), from: watcher)
        #expect(try #require(await watcher.next()).event == "watching")
        #expect(watcher.streaming)
        _ = try await fixture.conductor.trigger(TriggerRequest(action: "deploy", params: ["env": "prod"]))
        var phases: [Phase] = []
        while phases.last != .success, let event = await watcher.next() { if let to = event.transition?.to { phases.append(to) } }
        #expect(phases == [.queued, .loading, .success])
        watcher.close()
        fixture.service.closedOnLoop(watcher)
    }

    @Test("status lists what the caller may read, with what it may do")
    func status() async throws {
        let fixture = Fixture()
        let answer = try #require(await fixture.ask(#"{"op":"status"}"#, as: Recorder(uid: F.bob)))
        #expect(answer.actions?.map(\.name) == ["deploy", "hold"], "secret is not readable by bob")
        #expect(answer.actions?.first?.allowed == [.read])
    }

    @Test("every BatonError maps to its stable wire code", arguments: [
        (BatonError.busy(run: 1, action: "a", phase: .loading, since: Timestamp(microseconds: 0)), ErrorCode.busy),
        (.unknownAction("a"), .unknownAction), (.unknownRun(1), .unknownRun), (.badRequest("x"), .badRequest),
        (.forbidden("x"), .forbidden), (.shuttingDown, .shuttingDown), (.stopped("x"), .shuttingDown),
        (.storeUnavailable("x"), .storeUnavailable), (.internalError("x"), .internal),
    ] as [(BatonError, ErrorCode)])
    func errorCodes(_ error: BatonError, _ code: ErrorCode) {
        #expect(WireError(error).code == code)
        #expect(WireError(error).message == error.message)
    }

    @Test("a search looks only where the peer may read, so unreadable runs take no place; root's is unrestricted; no text is refused")
    func searchWhereReadable() async throws {
        let fixture = Fixture()
        fixture.history.runs.withLock { runs in
            runs = (1...30).map { RunSnapshot(id: $0, action: $0 % 2 == 0 ? "secret" : "deploy", key: "k", phase: .success,
                                              policy: .reject, params: [:], trigger: nil, queuedAt: Timestamp(rawValue: $0)) }
        }
        let alice = try #require(await fixture.ask(#"{"id":1,"op":"search","text":"x","filter":{"limit":5}}"#, as: Recorder(uid: Fixture.alice)))
        #expect(alice.matches?.map(\.run.id) == [29, 27, 25, 23, 21], "five of alice's, none of secret's")
        #expect(fixture.history.searches.withLock { $0.last?.actions } == ["deploy", "hold"])
        let root = try #require(await fixture.ask(#"{"id":2,"op":"search","text":"x","filter":{"limit":3}}"#, as: Recorder(uid: 0)))
        #expect(root.matches?.map(\.run.id) == [30, 29, 28])
        #expect(fixture.history.searches.withLock { $0.last?.actions } == [])
        let empty = try #require(await fixture.ask(#"{"id":3,"op":"search"}"#, as: Recorder(uid: 0)))
        #expect(empty.error?.code == .badRequest)
        let unknown = try #require(await fixture.ask(#"{"id":4,"op":"search","text":"x","action":"nope"}"#, as: Recorder(uid: 0)))
        #expect(unknown.error?.code == .unknownAction)
        // The search stops when its caller has gone: the store is told so through `stop`.
        let gone = Recorder(uid: 0)
        gone.close()
        _ = await fixture.ask(#"{"id":5,"op":"search","text":"x"}"#, as: gone)
        #expect(fixture.history.stopped.withLock { $0 } == [false, false, true])
    }

    @Test("a history longer than a page goes as runs events, each read once the one before drained, then the final answer; a page's length counts unreadable runs too")
    func historyPages() async throws {
        let fixture = Fixture()
        fixture.history.runs.withLock { runs in
            runs = (1...1_100).map { RunSnapshot(id: $0, action: $0 % 10 == 0 ? "secret" : "deploy", key: "k", phase: .success,
                                                 policy: .reject, params: [:], trigger: nil, queuedAt: Timestamp(rawValue: $0)) }
        }
        let reader = Recorder(uid: Fixture.alice)
        reader.holdDrains()
        fixture.service.receivedOnLoop(.line(Array(#"{"id":1,"op":"history","filter":{"limit":1100}}"#.utf8)), from: reader)
        let first = try #require(await reader.next())
        #expect(first.ok == nil && first.event == "runs")
        #expect(first.runs?.map(\.id) == (601...1_100).reversed().filter { $0 % 10 != 0 })
        var turns = 0
        while reader.drainWaiters == 0 && turns < 100_000 {
            await Task.yield()
            turns += 1
        }
        #expect(reader.drainWaiters == 1 && reader.sentCount == 1, "the next page waits for the client")
        reader.releaseDrains()
        let second = try #require(await reader.next())
        #expect(second.event == "runs" && second.runs?.map(\.id) == (101...600).reversed().filter { $0 % 10 != 0 })
        let last = try #require(await reader.next())
        #expect(last.ok == true && last.event == nil && last.runs?.map(\.id) == (1...100).reversed().filter { $0 % 10 != 0 })
        // The request ends on the loop just after its answer went out (which woke this task).
        turns = 0
        while reader.ended == 0 && turns < 100_000 {
            await Task.yield()
            turns += 1
        }
        #expect(reader.ended == 1)

        let short = Recorder(uid: Fixture.alice)
        let answer = try #require(await fixture.ask(#"{"id":2,"op":"history","filter":{"limit":500,"reverse":true}}"#, as: short))
        #expect(short.sentCount == 1 && answer.ok == true && answer.runs?.count == 450 && answer.runs?.first?.id == 1)
    }
}
