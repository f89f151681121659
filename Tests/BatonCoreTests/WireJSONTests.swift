import BatonCore
import Foundation
import Testing

@Suite("Hand-written JSON of responses")
struct WireJSONTests {
    static let run = RunSnapshot(
        id: 42, action: "deploy", key: "deploy env=prod", phase: .failure, policy: .queue,
        params: ["env": "prod", "note": "a \"quoted\"\nline\t\u{1} é 日本"], trigger: Peer(uid: 1000, gid: 100, pid: 4242),
        queuedAt: Timestamp(rawValue: 1_700_000_000_000_000), startedAt: Timestamp(rawValue: 1_700_000_000_100_000),
        endedAt: Timestamp(rawValue: 1_700_000_001_000_000), attempts: 3, exitCode: 3, signal: 9, reason: "exit",
        error: "exited with status 3: disk full", progress: Progress(fraction: 0.42, completed: 3, total: 7, message: "copying"),
        estimate: 1_500_000)

    static var responses: [Response] {
        var full = Response(id: .number(7))
        full.run = run
        full.decision = .followUp
        full.shared = false
        var measured = run
        measured.cpuUser = 310_000
        measured.cpuSystem = 12_000
        measured.memoryPeak = 104_857_600
        var hooked = RunSnapshot(id: 2, action: "deploy", key: "deploy", phase: .queued, policy: .reject, params: [:], trigger: nil,
                                 queuedAt: Timestamp(rawValue: 6))
        hooked.via = "webhook gh from 203.0.113.7, delivery 72d3\"\u{1}"
        full.runs = [run, measured, RunSnapshot(id: 1, action: "a", key: "a", phase: .queued, policy: .reject, params: [:], trigger: nil,
                                      queuedAt: Timestamp(rawValue: 5)), hooked]
        var cancelled = run
        cancelled.phase = .cancelled
        cancelled.cancelledBy = 0
        cancelled.progress = Progress(message: "only a message")
        let update = Response.update(.text("x/\"y\""), RunUpdate(run: cancelled, transition: Transition(
            runID: 42, seq: 4, from: .retrying, to: .cancelled, at: Timestamp(rawValue: 9),
            detail: TransitionDetail(reason: "cancelled", error: "cancelled", by: 1000, replaces: [1, 2]))))
        var ping = Response(id: nil)
        ping.version = "0.1.0"
        ping.pid = 77
        let busy = Response.failure(.number(-1), WireError(.busy(run: 3, action: "a", phase: .loading, since: Timestamp(rawValue: 0), line: 4)))
        var status = Response(id: .number(3))
        status.actions = [Self.action, ActionInfo(name: "bare", description: nil, exec: [], policy: .reject, policies: [], timeout: nil,
                                                  params: [:], keyParams: [])]
        status.storeProblem = "disk full"
        status.processTree = "cgroup"
        full.runs?.append(Self.complete)
        var reloaded = Response(id: .number(4))
        reloaded.warnings = ["webhooks.listen changes only at restart", "a \"quoted\"\nline"]
        var replacing = Response(id: .number(8))
        replacing.run = run
        replacing.decision = .replaced
        replacing.shared = false
        replacing.replaced = [5, 6]
        let limited = Response.failure(.number(-2), WireError(.rateLimited(action: "a", limit: RateLimit(runs: 2, per: .seconds(60)),
                                                                           next: Timestamp(rawValue: 1_764_558_900_000_000)), at: Timestamp(rawValue: 1_764_558_860_000_000)))
        return [full, update, ping, busy, limited, Response(id: .text(""), ok: nil), status, reloaded, replacing]
    }

    /// An action with every field set (`everyFieldSet` keeps it so when a field is added).
    static var action: ActionInfo {
        var info = ActionInfo(name: "deploy", description: "ships \"it\"\n", exec: ["/bin/sh", "-c", "echo \\ é"], policy: .queue,
                              policies: [.queue, .reject], timeout: 60_000_000,
                              params: ["env": ParamInfo(pattern: "^[a-z]+$", default: "prod"), "note": ParamInfo(pattern: nil, default: nil),
                                       "token": ParamInfo(pattern: "^[a-z0-9]+$", default: nil, secret: true)],
                              keyParams: ["env"], inFlight: [run], last: run)
        info.removed = true
        info.allowed = [.read, .trigger]
        info.schedules = ["*-*-* 03:00:00", "Mon *-*-* 12:00"]
        info.scheduleJitter = 300_000_000
        info.catchUp = true
        info.queueDepth = 3
        info.paused = ActionPause(action: "deploy", by: "alice", reason: "migrating \"db\"", at: Timestamp(rawValue: 1_764_558_000_000_000),
                                  until: Timestamp(rawValue: 1_764_565_200_000_000))
        info.locks = [LockClaim("db"), LockClaim("heavy-io", limit: 2)]
        info.cooldown = 600_000_000
        info.force = true
        info.hooks = HookNames(failure: "page-oncall", success: nil, change: "notify \"them\"", chain: true)
        var success = run
        success.phase = .success
        info.cooling = [success]
        info.rateLimit = RateInfo(RateLimit(runs: 10, per: .seconds(3_600), scope: .action, over: .delay),
                                  used: [.init(key: "deploy", left: 3, frees: 1_764_558_900_000_000), .init(key: "deploy env=b", left: 10, frees: nil)])
        info.needs = ["build-a", "build \"b\""]
        return info
    }

    @Test("the fixtures set every optional field, so that a field added without its hand-written JSON fails the test above")
    func everyFieldSet() {
        for (name, fixture) in [("ActionInfo", Mirror(reflecting: Self.action)), ("RunSnapshot", Mirror(reflecting: Self.complete))] {
            for child in fixture.children {
                let value = Mirror(reflecting: child.value)
                #expect(!(value.displayStyle == .optional && value.children.isEmpty), "\(name).\(child.label ?? "?") is nil in the fixture")
            }
        }
    }

    /// `run` with the fields it leaves out set too.
    static var complete: RunSnapshot {
        var run = run
        run.cancelledBy = 0
        run.host = "web-1"
        run.seq = 3
        run.cpuUser = 1
        run.cpuSystem = 2
        run.memoryPeak = 3
        run.via = "webhook gh"
        run.slot = Timestamp(rawValue: 1_700_000_000_000_000)
        run.hook = HookCause(run: 7, action: "deploy", event: .failure)
        run.waiting = LockWait(lock: "db", limit: 1, holders: [.init(run: 12, action: "migrate")], ahead: [.init(run: 13, action: "backup")])
        run.debounceUntil = Timestamp(rawValue: 1_764_558_003_200_000)
        run.rateUntil = Timestamp(rawValue: 1_764_558_900_000_000)
        run.coolsUntil = Timestamp(rawValue: 1_764_558_600_000_000)
        run.line = 2
        run.needs = [NeededRun(action: "build-a", run: 41, phase: .success, reason: "exit"), NeededRun(action: "build-b", run: 42, phase: .loading)]
        run.neededBy = [NeededRun(action: "release", run: 44, phase: .queued)]
        run.approval = ApprovalState(by: ["group:ops", "user:al\"ice"], until: Timestamp(rawValue: 1_700_000_003_600_000), verdict: .denied,
                                     decidedBy: "bob", decidedAt: Timestamp(rawValue: 1_700_000_000_500_000), reason: "not \"today\"")
        return run
    }

    @Test("a response line decodes to the same JSON value JSONEncoder writes", arguments: responses.indices)
    func sameAsEncoder(index: Int) throws {
        let response = Self.responses[index]
        let ours = try JSONSerialization.jsonObject(with: Data(response.jsonLine())) as? NSDictionary
        let reference = try JSONSerialization.jsonObject(with: JSONEncoder().encode(response)) as? NSDictionary
        #expect(ours != nil)
        #expect(ours == reference)
        let decoded = try JSONDecoder().decode(Response.self, from: Data(response.jsonLine()))
        #expect(decoded.run == response.run)
        #expect(decoded.transition == response.transition)
        #expect(decoded.runs == response.runs)
        #expect(decoded.error == response.error)
    }
}
