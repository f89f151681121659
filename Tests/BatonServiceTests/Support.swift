import BatonCore
import BatonIPC
@testable import BatonService
import Foundation

/// A caller that records what the service answers: the test's side of a connection, without one.
final class Recorder: Caller {
    let peer: Peer
    private let state = Locked<(lines: [Response], ended: Int, closed: Bool, streaming: Bool)>(([], 0, false, false))
    private let stream: AsyncStream<Response>
    private let continuation: AsyncStream<Response>.Continuation
    private let iterator: Locked<AsyncStream<Response>.Iterator>

    init(uid: UInt32, gid: UInt32? = nil) {
        peer = Peer(uid: uid, gid: gid ?? uid, pid: 4242)
        (stream, continuation) = AsyncStream<Response>.makeStream()
        iterator = Locked(stream.makeAsyncIterator())
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    var sentCount: Int { state.withLock { $0.lines.count } }
    var ended: Int { state.withLock { $0.ended } }
    var streaming: Bool { state.withLock { $0.streaming } }

    func send(_ line: [UInt8]) {
        let response = (try? JSONDecoder().decode(Response.self, from: Data(line))) ?? Response(id: nil, ok: false)
        state.withLock { $0.lines.append(response) }
        continuation.yield(response)
    }

    func endRequest() { state.withLock { $0.ended += 1 } }

    /// Drain waiters are called at once unless `holdDrains` (then by `releaseDrains`).
    private let drains = Locked<(held: Bool, waiting: [@Sendable () -> Void])>((false, []))
    func holdDrains() { drains.withLock { $0.held = true } }
    var drainWaiters: Int { drains.withLock { $0.waiting.count } }
    func releaseDrains() {
        let waiting = drains.withLock { drains in
            defer { drains = (false, []) }
            return drains.waiting
        }
        for body in waiting { body() }
    }
    func whenDrained(below bytes: Int, _ body: @escaping @Sendable () -> Void) {
        let now = drains.withLock { drains -> Bool in
            if !drains.held { return true }
            drains.waiting.append(body)
            return false
        }
        if now { body() }
    }
    func markStreaming() { state.withLock { $0.streaming = true } }

    /// Requests parked now (`park` less `unpark`), as a connection counts them for a restart.
    private let parkCount = Locked(0)
    var parked: Int { parkCount.withLock { $0 } }
    func park() { parkCount.withLock { $0 += 1 } }
    func unpark() { parkCount.withLock { $0 -= 1 } }
    func close() { state.withLock { $0.closed = true } }

    /// Bytes held for the client (`hold`), the most ever held, and the limit past which the
    /// recorder closes, as a connection does past its unsent-output limit.
    private let holding = Locked<(now: Int, most: Int, calls: Int)>((0, 0, 0))
    private let limit = Locked(Int.max)
    var holdLimit: Int {
        get { limit.withLock { $0 } }
        set { limit.withLock { $0 = newValue } }
    }
    var held: (now: Int, most: Int, calls: Int) { holding.withLock { $0 } }
    func hold(_ bytes: Int) {
        guard !isClosed else { return }
        let over = holding.withLock { holding -> Bool in
            holding.now += bytes
            holding.most = max(holding.most, holding.now)
            holding.calls += 1
            return holding.now > limit.withLock { $0 }
        }
        if over { close() }
    }

    /// The next line the service sends (events and final answers alike).
    func next() async -> Response? {
        var it = iterator.withLock { $0 }
        let value = await it.next()
        iterator.withLock { $0 = it }
        return value
    }

    /// The next final answer (skipping `event` lines).
    func answer() async -> Response? {
        while let response = await next() {
            if response.event == nil { return response }
        }
        return nil
    }
}

/// A history with what a test puts in it.
final class FakeHistory: HistoryReader {
    let runs = Locked<[RunSnapshot]>([])
    let details = Locked<[Int64: RunDetail]>([:])

    /// The runs of the filter's actions, newest first (oldest first with `reverse`), past `after`, up to `limit`.
    func runs(_ filter: HistoryFilter) async throws(BatonError) -> [RunSnapshot] {
        let all = runs.withLock { $0 }.filter { filter.actions.isEmpty || filter.actions.contains($0.action) }
        let ordered = all.sorted { filter.reverse ? $0.id < $1.id : $0.id > $1.id }
        let after = ordered.filter { run in filter.after.map { filter.reverse ? run.id > $0 : run.id < $0 } ?? true }
        return Array(after.prefix(filter.limit))
    }
    func run(_ id: Int64) async throws(BatonError) -> RunDetail? { details.withLock { $0[id] } }
    func stats(actions: [String], since: Timestamp?) async throws(BatonError) -> [ActionStats] {
        Set(runs.withLock { $0 }.map(\.action)).filter { actions.isEmpty || actions.contains($0) }.sorted()
            .map { ActionStats(action: $0) }
    }
    func denied(limit: Int) async throws(BatonError) -> [TriggerRecord] { [] }
    func lastEnded() async throws(BatonError) -> [RunSnapshot] { [] }
    func recentDurations(of actions: [String]) async throws(BatonError) -> [String: [Int64]] { [:] }
    /// What a watch's replay answers, and the gate it waits at first (open unless a test closes it).
    let replay = Locked(Replay())
    let replayGate = Locked<Gate?>(nil)
    let cursors = Locked<[WatchCursor]>([])
    func transitions(after cursor: WatchCursor, action: String?, limit: Int) async throws(BatonError) -> Replay {
        cursors.withLock { $0.append(cursor) }
        if let gate = replayGate.withLock({ $0 }) { await gate.wait() }
        return replay.withLock { $0 }
    }
    /// The filters searches were asked with, in order, and whether each was told to stop.
    let searches = Locked<[HistoryFilter]>([])
    let stopped = Locked<[Bool]>([])
    /// Every run of the filter's actions matches, newest first, up to the limit.
    func search(_ text: String, _ filter: HistoryFilter, stop: @escaping @Sendable () -> Bool) async throws(BatonError) -> SearchResult {
        searches.withLock { $0.append(filter) }
        stopped.withLock { $0.append(stop()) }
        return SearchResult(matches: try await runs(filter).map { SearchMatch(run: $0, lines: [MatchedLine(line: 1, text: text)], lineCount: 1) })
    }
}

/// A service on a real conductor with in-process actions and a memory store: every operation,
/// no socket, no process.
struct Fixture {
    static let alice: UInt32 = 60_001, bob: UInt32 = 60_002, ops: UInt32 = 60_100, staff: UInt32 = 60_200

    let service: Service
    let conductor: Conductor
    let history = FakeHistory()
    let gate = Gate()
    /// What the conductor wrote (runs, transitions).
    let store = MemoryStore()

    /// `deploy` (alice and the ops group may trigger, ops may cancel and pause), `hold` (waits for the gate),
    /// `secret` (only root reads it).
    init(userName: @escaping @Sendable (UInt32) -> String? = UserDatabase.userName,
         accounts: @escaping @Sendable (String) -> ActingUser? = Fixture.accounts, kept: Duration = Service.groupsKept) {
        conductor = Conductor(actions: [], store: store)
        let gate = gate
        conductor.register(Action(name: "deploy", params: ["env": ParamSpec(pattern: try! ParamPattern("^(staging|prod)$"))])) { _ in }
        conductor.register(Action(name: "hold", policy: .reject, policies: [.join])) { _ in await gate.wait() }
        conductor.register(Action(name: "secret")) { _ in }
        var actions = conductor.configuredActions()
        for index in actions.indices where actions[index].name == "deploy" {
            actions[index].allow = AccessPolicy.Override(trigger: AccessRule(users: [Self.alice], groups: [Self.ops]), cancel: AccessRule(groups: [Self.ops]),
                                                               pause: AccessRule(groups: [Self.ops]))
        }
        for index in actions.indices where actions[index].name == "secret" {
            actions[index].allow = AccessPolicy.Override(read: .nobody)
        }
        let generation = Generation(actions: actions, access: AccessPolicy(trigger: .anyone, cancel: .anyone, read: .anyone), owner: 0)
        service = Service(conductor: conductor, history: history, journal: store, generation: generation,
                          hooks: Service.Hooks(reload: { _ in .refused("reloads are refused in this test") }, prune: { dryRun throws(BatonError) in PruneReport(dryRun: dryRun) }), reactor: conductor.reactor,
                          userName: userName, accounts: accounts, kept: kept)
    }

    /// The accounts a request's `as` may name here: alice and bob, each in a group of their own.
    @Sendable static func accounts(_ name: String) -> ActingUser? {
        switch name {
        case "alice": ActingUser(name: "alice", uid: alice, gid: alice, groups: [alice])
        case "bob": ActingUser(name: "bob", uid: bob, gid: bob, groups: [bob])
        // Groups `asGroup` may name: ops (may trigger and cancel deploy) and staff (nothing of its own).
        case "group:ops": ActingUser(name: "group:ops", uid: Peer.groupPrincipalUID, gid: ops, groups: [ops])
        case "group:staff": ActingUser(name: "group:staff", uid: Peer.groupPrincipalUID, gid: staff, groups: [staff])
        default: nil
        }
    }

    /// Sends one request line as `caller` and returns its final answer.
    func ask(_ json: String, as caller: Recorder) async -> Response? {
        service.receivedOnLoop(.line(Array(json.utf8)), from: caller)
        return await caller.answer()
    }
}

/// Opens once; every waiter goes on (and one whose task is cancelled, at once).
final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let open = state.withLock { state -> Bool in
                    if !state.open { state.waiters.append(waiter) }
                    return state.open
                }
                if open { waiter.resume() }
            }
        } onCancel: {
            self.open()
        }
    }
    func open() {
        let waiters = state.withLock { state in
            defer { state.open = true; state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

extension Service {
    /// A request line, handed over on the loop as the socket server does.
    func receivedOnLoop(_ frame: RequestFrame, from caller: any Caller) {
        reactor.post { self.received(frame, from: caller) }
    }

    /// The caller has gone, told on the loop as the socket server does.
    func closedOnLoop(_ caller: any Caller) {
        reactor.post { self.closed(caller) }
    }
}
