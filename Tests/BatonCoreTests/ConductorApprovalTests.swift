@testable import BatonCore
@testable import BatonEngine
import Testing

/// Approvals (issue 40, item 5) in the conductor's state: a run of an action with `approve` is
/// created queued and waits, holding its key, until one of its approvers (not its trigger, unless
/// `self: true`) approves it (it starts) or denies it (cancelled, never started), or its timeout
/// cancels it; each decision written before it is answered, and decided once.
@Suite("Conductor: approvals")
struct ConductorApprovalTests {
    typealias Rig = ConductorDebounceTests.Rig

    static let alice = Approver(uid: 1001, name: "alice", groups: [50])
    static let bob = Approver(uid: 1002, name: "bob", groups: [50])
    static let eve = Approver(uid: 1003, name: "eve", groups: [60])

    static func deploy(policy: Policy = .reject, timeout: Duration? = .seconds(3_600), allowsSelf: Bool = false) -> Action {
        var deploy = Action(name: "deploy", exec: ["true"], policy: policy, policies: [.reject, .join, .queue, .replace],
                            params: ["ref": ParamSpec()])
        deploy.approve = ApprovalRule(by: ["group:ops"], approvers: AccessRule(groups: [50]), timeout: timeout, allowsSelf: allowsSelf)
        return deploy
    }

    static func trigger(_ rig: inout Rig, _ action: Action, by uid: UInt32 = 1001, ref: String = "v1", policy: Policy? = nil,
                        at seconds: Double) -> ConductorState.Token {
        rig.at(seconds)
        rig.token += 1
        rig.handle(.trigger(rig.token, Trigger(action: action, key: action.name, policy: policy ?? action.policy, params: ["ref": ref],
                                               peer: Peer(uid: uid, gid: 50, pid: 1))))
        return rig.token
    }

    static func decide(_ rig: inout Rig, _ run: Int64, by approver: Approver, approve: Bool = true, reason: String? = nil)
        -> ConductorState.Answer? {
        rig.token += 1
        rig.handle(.approval(rig.token, run: run, approver, approve: approve, reason: reason))
        return rig.answers[rig.token]
    }

    var approvals: (Rig) -> [ApprovalState] = { rig in
        rig.written.compactMap { if case let .approval(_, state) = $0 { state } else { nil } }
    }

    @Test("a trigger that joins a run waiting for approval is answered with the wait, as its maker was")
    func joinerToldTheWait() throws {
        let policy = Policy.join
        var rig = Rig()
        let maker = Self.trigger(&rig, Self.deploy(policy: policy), at: 0)
        let joiner = Self.trigger(&rig, Self.deploy(policy: policy), by: 1003, at: 5)
        let wait = ApprovalState(by: ["group:ops"], until: Rig.start + .seconds(3_600))
        for token in [maker, joiner] {
            guard case let .ticket(_, run)? = rig.answers[token] else { Issue.record("\(String(describing: rig.answers[token]))"); continue }
            #expect(run.approval == wait && run.phase == .queued, "token \(token): \(run)")
        }
    }

    @Test("a triggered run waits, queued, with its wait written in its creation's item; an approver's yes starts it with the params it was triggered with")
    func approved() throws {
        var rig = Rig()
        let token = Self.trigger(&rig, Self.deploy(), at: 0)
        #expect(rig.decision(token) == .created(1) && rig.launched.isEmpty)
        let wait = ApprovalState(by: ["group:ops"], until: Rig.start + .seconds(3_600))
        #expect(approvals(rig) == [wait])
        #expect(rig.state.snapshot(of: 1)?.approval == wait && rig.state.snapshot(of: 1)?.phase == .queued)
        #expect(rig.timers[1]?[.approval] == Rig.start + .seconds(3_600))
        rig.at(60)
        let answer = Self.decide(&rig, 1, by: Self.bob)
        let decided = ApprovalState(by: ["group:ops"], until: Rig.start + .seconds(3_600), verdict: .approved, decidedBy: "bob",
                                    decidedAt: Rig.start + .seconds(60))
        guard case let .approval(told)? = answer else { Issue.record("\(String(describing: answer))"); return }
        #expect(told.approval == decided && told.phase == .loading, "answered with the run as the approval left it: started")
        #expect(approvals(rig).last == decided, "the decision is written before it is answered")
        #expect(rig.launched == [1])
        #expect(rig.state.snapshot(of: 1)?.params == ["ref": "v1"])
    }

    @Test("the trigger's caller may not approve unless self: true; someone outside `by` may not; both refused forbidden, the run still waiting")
    func whoMay() {
        var rig = Rig()
        _ = Self.trigger(&rig, Self.deploy(), by: 1001, at: 0)
        guard case let .failed(.forbidden(refusal))? = Self.decide(&rig, 1, by: Self.alice) else { Issue.record("self approval allowed"); return }
        #expect(refusal == "alice triggered run 1 of deploy and may not approve it (the action's approve has no self: true)")
        guard case let .failed(.forbidden(outside))? = Self.decide(&rig, 1, by: Self.eve, approve: false) else { Issue.record("eve allowed"); return }
        #expect(outside == "eve may not approve run 1 of deploy: approvals are by group:ops")
        #expect(rig.launched.isEmpty && approvals(rig).count == 1 && rig.state.snapshot(of: 1)?.approval?.isWaiting == true)
        var own = Rig()
        _ = Self.trigger(&own, Self.deploy(allowsSelf: true), by: 1001, at: 0)
        #expect(Self.decide(&own, 1, by: Self.alice).map { if case .approval = $0 { true } else { false } } == true)
        #expect(own.launched == [1], "self: true lets the trigger approve")
    }

    @Test("a deny ends the run cancelled, never started, with who and why; a second decision is refused naming the first")
    func deniedOnce() throws {
        var rig = Rig()
        _ = Self.trigger(&rig, Self.deploy(), at: 0)
        rig.at(5)
        guard case .approval? = Self.decide(&rig, 1, by: Self.bob, approve: false, reason: "not on a Friday") else { throw ConductorDebounceTests.Failed() }
        let ended = try #require(rig.published.last?.run)
        #expect(ended.phase == .cancelled && ended.reason == "denied" && ended.error == "denied by bob: not on a Friday")
        #expect(rig.launched.isEmpty && rig.closed == [1])
        // Closed: the run is no longer in flight; one decided but still in flight answers with the decision.
        #expect(Self.decide(&rig, 1, by: Self.bob) == .failed(.unknownRun(1)))
        var queued = Rig()
        _ = Self.trigger(&queued, Self.deploy(policy: .queue), at: 0)
        _ = Self.decide(&queued, 1, by: Self.bob)
        _ = Self.trigger(&queued, Self.deploy(policy: .queue), by: 1002, at: 1)
        _ = Self.decide(&queued, 2, by: Self.alice)
        #expect(queued.launched == [1], "approved, the follow-up still waits for its key")
        #expect(Self.decide(&queued, 2, by: Self.alice, approve: false)
            == .failed(.notWaiting(run: 2, "run 2 of deploy was decided already: approved by alice")))
        #expect(queued.written.filter { if case let .approval(2, state) = $0 { state.verdict != nil } else { false } }.count == 1)
    }

    @Test("undecided at its timeout, the run ends cancelled (approval timed out after 1h00m), its timeout written as the decision")
    func timedOut() throws {
        var rig = Rig()
        _ = Self.trigger(&rig, Self.deploy(), at: 0)
        rig.at(3_599)
        #expect(rig.closed.isEmpty)
        rig.at(3_600)
        let ended = try #require(rig.published.last?.run)
        #expect(ended.phase == .cancelled && ended.error == "approval timed out after 1h00m")
        #expect(approvals(rig).last?.verdict == .timedOut && rig.launched.isEmpty)
    }

    @Test("while it waits the run holds its key: reject refuses, join shares it, replace cancels it as replaced")
    func holdsItsKey() throws {
        var rig = Rig()
        _ = Self.trigger(&rig, Self.deploy(), at: 0)
        let rejected = Self.trigger(&rig, Self.deploy(), by: 1002, at: 1)
        guard case .failed(.busy(run: 1, _, _, _, _))? = rig.answers[rejected] else { Issue.record("\(String(describing: rig.answers[rejected]))"); return }
        let joined = Self.trigger(&rig, Self.deploy(), by: 1002, policy: .join, at: 2)
        #expect(rig.decision(joined) == .joined(1))
        let replacing = Self.trigger(&rig, Self.deploy(), by: 1002, ref: "v2", policy: .replace, at: 3)
        #expect(rig.decision(replacing) == .replaced(2, stopping: [1]))
        let first = try #require(rig.published.first { $0.run.id == 1 && $0.run.phase == .cancelled }?.run)
        #expect(first.reason == "replaced")
        #expect(rig.state.snapshot(of: 2)?.approval?.isWaiting == true && rig.launched.isEmpty, "the new run waits for its own approval")
        #expect(Self.decide(&rig, 1, by: Self.bob) == .failed(.unknownRun(1)))
    }

    @Test("approved, a paused action's run still waits for the resume; a run whose needs are unmet still waits for them")
    func stillHeld() {
        var rig = Rig()
        _ = Self.trigger(&rig, Self.deploy(), at: 0)
        rig.handle(.pause(100, ActionPause(action: "deploy", by: "carol", reason: "freeze", at: rig.now)))
        _ = Self.decide(&rig, 1, by: Self.bob)
        #expect(rig.launched.isEmpty)
        rig.handle(.resume(101, action: "deploy", by: "carol"))
        #expect(rig.launched == [1])
        var needy = Self.deploy()
        needy.needs = [NeedTarget(action: Action(name: "build", exec: ["true"], policy: .join), params: [:])]
        var rig2 = Rig()
        _ = Self.trigger(&rig2, needy, at: 0)
        #expect(rig2.launched.isEmpty && rig2.state.snapshot(of: 2) == nil, "the needed build waits for the approval: not made yet")
        _ = Self.decide(&rig2, 1, by: Self.bob)
        #expect(rig2.launched == [2], "approved, its needs are triggered")
        rig2.exit(2, at: 1)
        #expect(rig2.launched == [2, 1])
    }

    @Test("a denied or timed-out run never ran its needs (review item 2)")
    func needsOnlyOnceApproved() {
        var needy = Self.deploy()
        needy.needs = [NeedTarget(action: Action(name: "build", exec: ["true"], policy: .join), params: [:])]
        var denied = Rig()
        _ = Self.trigger(&denied, needy, at: 0)
        _ = Self.decide(&denied, 1, by: Self.bob, approve: false)
        var late = Rig()
        _ = Self.trigger(&late, needy, at: 0)
        late.at(3_600)
        for rig in [denied, late] {
            #expect(rig.launched.isEmpty && rig.closed == [1])
            #expect(rig.written.allSatisfy { if case let .created(run, _) = $0 { run.action == "deploy" } else { true } }, "no build made")
        }
    }

    /// `build` (anyone's, no approval) whose success fires `hooked`; `hooked` is the gated deploy, or
    /// an action that needs it (review item 1).
    static func chain(needing: Bool) -> Action {
        var deploy = Self.deploy()
        if needing {
            var relay = Action(name: "relay", exec: ["true"], policy: .queue)
            relay.needs = [NeedTarget(action: deploy, params: ["ref": "evil"])]
            deploy = relay
        }
        var build = Action(name: "build", exec: ["true"], policy: .queue, params: ["ref": ParamSpec()])
        build.hooks.targets[.success] = HookTarget(action: deploy, params: ["ref": "evil"])
        return build
    }

    @Test("self-approval through a hook: ann's build fires a gated deploy (or a run that needs it); she may not approve it, nor see it listed", arguments: [false, true])
    func selfThroughHook(needing: Bool) throws {
        var rig = Rig()
        _ = Self.trigger(&rig, Self.chain(needing: needing), by: 1001, ref: "evil", at: 0)
        rig.exit(1, at: 1)
        let gated = try #require(rig.state.awaitingApproval(by: Self.bob).first, "bob is asked")
        #expect(gated.action == "deploy" && gated.trigger == nil)
        #expect(rig.state.awaitingApproval(by: Self.alice).isEmpty, "not listed for the one whose trigger made it")
        guard case let .failed(.forbidden(refusal))? = Self.decide(&rig, gated.id, by: Self.alice) else { Issue.record("ann approved her own input"); return }
        #expect(refusal.hasPrefix("alice triggered the run that made run \(gated.id) of deploy ("), "\(refusal)")
        guard case .approval? = Self.decide(&rig, gated.id, by: Self.bob) else { Issue.record("bob refused"); return }
        #expect(rig.launched.contains(gated.id))
    }

    @Test("self-approval through a hook, its needs and their hook: ann's build fires relay, which needs stage, whose success fires the gated deploy; she may not approve it (audit D3)")
    func selfThroughHookNeedsHook() throws {
        var stage = Action(name: "stage", exec: ["true"], policy: .join)
        stage.hooks.targets[.success] = HookTarget(action: Self.deploy(), params: ["ref": "evil"])
        var relay = Action(name: "relay", exec: ["true"], policy: .queue)
        relay.needs = [NeedTarget(action: stage, params: [:])]
        var build = Action(name: "build", exec: ["true"], policy: .queue, params: ["ref": ParamSpec()])
        build.hooks.targets[.success] = HookTarget(action: relay, params: [:])
        var rig = Rig()
        _ = Self.trigger(&rig, build, by: 1001, ref: "evil", at: 0)
        rig.exit(1, at: 1)
        let staged = try #require(rig.state.flights.values.first { $0.action.name == "stage" }?.run.id, "relay's need made a stage run")
        rig.exit(staged, at: 2)
        let gated = try #require(rig.state.awaitingApproval(by: Self.bob).first, "bob is asked")
        #expect(gated.action == "deploy" && gated.trigger == nil)
        #expect(rig.state.awaitingApproval(by: Self.alice).isEmpty, "not listed for the one whose trigger made it")
        guard case .failed(.forbidden)? = Self.decide(&rig, gated.id, by: Self.alice) else { Issue.record("ann approved her own chain"); return }
        guard case .approval? = Self.decide(&rig, gated.id, by: Self.bob) else { Issue.record("bob refused"); return }
    }

    @Test("who may not decide a run is told only that: not whether it was decided or started (review item 4)")
    func refusalFirst() {
        var rig = Rig()
        _ = Self.trigger(&rig, Self.deploy(), by: 1002, at: 0)
        _ = Self.decide(&rig, 1, by: Self.alice)
        guard case .failed(.forbidden)? = Self.decide(&rig, 1, by: Self.eve, approve: false) else {
            Issue.record("eve was told the decision: \(String(describing: Self.decide(&rig, 1, by: Self.eve)))"); return
        }
        guard case .failed(.forbidden)? = Self.decide(&rig, 1, by: Self.bob) else { Issue.record("bob, its trigger, was told"); return }
    }

    @Test("recovery after the config dropped approve: a waiting run waits no more and starts, its approval written waived (review item 3)")
    func recoveredRuleGone() {
        var plain = Self.deploy()
        plain.approve = nil
        var rig = Rig()
        rig.at(100)
        rig.handle(.recover(100, [RecoveredRun(Self.left(1, ApprovalState(by: ["group:ops"], until: Rig.start + .seconds(3_600))), action: plain)]))
        #expect(rig.launched == [1])
        #expect(approvals(rig).last?.verdict == .waived && approvals(rig).last?.decisionText == "approval waived: the action's approve was removed from the config")
        // Its needs, held back for the approval, run first.
        plain.needs = [NeedTarget(action: Action(name: "build", exec: ["true"], policy: .join), params: [:])]
        var needy = Rig()
        needy.at(100)
        needy.handle(.recover(100, [RecoveredRun(Self.left(1, ApprovalState(by: ["group:ops"], until: nil)), action: plain)]))
        #expect(needy.launched == [2], "the needed build starts, the run waits for it")
        needy.exit(2, at: 101)
        #expect(needy.launched == [2, 1])
    }

    @Test("a reload that drops approve waives a waiting run (written waived, its needs asked first), as a restart and a fleet's reload do (audit D5); one that also changes the command or a gate (a need added), or removes the action, waives nothing (review s35 H1)")
    func reloadWaives() {
        var needy = Self.deploy()
        needy.needs = [NeedTarget(action: Action(name: "build", exec: ["true"], policy: .join), params: [:])]
        var plain = needy
        plain.approve = nil
        var rig = Rig()
        _ = Self.trigger(&rig, needy, at: 0)
        rig.at(10)
        rig.handle(.reloaded(["deploy": plain]))
        #expect(approvals(rig).last?.verdict == .waived && approvals(rig).last?.decidedAt == Rig.start + .seconds(10)
                && approvals(rig).last?.decisionText == "approval waived: the action's approve was removed from the config")
        #expect(rig.launched == [2], "the build it needs starts first")
        rig.exit(2, at: 11)
        #expect(rig.launched == [2, 1])
        #expect(Self.decide(&rig, 1, by: Self.bob).map { if case .failed = $0 { true } else { false } } == true, "decided once: waived")
        var changed = Self.deploy()
        changed.approve = nil
        changed.exec = ["sh", "-c", "echo B"]
        var gated = Self.deploy()
        gated.approve = nil
        gated.needs = needy.needs
        for (what, configured) in [("command changed", ["deploy": changed]), ("a need added", ["deploy": gated]), ("action removed", [:]),
                                   ("approve kept", ["deploy": Self.deploy()])] {
            var kept = Rig()
            _ = Self.trigger(&kept, Self.deploy(), at: 0)
            kept.handle(.reloaded(configured))
            #expect(kept.launched.isEmpty && approvals(kept).count == 1, "\(what)")
            _ = Self.decide(&kept, 1, by: Self.bob)
            #expect(kept.launched == [1], "\(what): approved, it runs")
        }
    }

    @Test("a run made after a reload from a definition before it (the old need of a waived run, which had approve too) is waived at its creation, as the reload waived the waiting ones, and starts: no wait appears that the reload gave up (review s35 M1)")
    func madeAfterReloadWaived() {
        var build = Self.deploy()
        build.name = "build"
        build.policy = .join
        var deploy = Self.deploy()
        deploy.needs = [NeedTarget(action: build, params: ["ref": "{ref}"])]
        var rig = Rig()
        _ = Self.trigger(&rig, deploy, at: 0)
        // As the config reader links them: the reloaded deploy needs the reloaded build.
        var (plainBuild, plainDeploy) = (build, deploy)
        plainBuild.approve = nil
        plainDeploy.approve = nil
        plainDeploy.needs = [NeedTarget(action: plainBuild, params: ["ref": "{ref}"])]
        rig.at(10)
        rig.handle(.reloaded(["build": plainBuild, "deploy": plainDeploy]))
        // Waived, deploy asks its own need: the build it was triggered with, whose approve the reload removed too.
        #expect(approvals(rig).map(\.verdict) == [nil, .waived, .waived], "\(approvals(rig))")
        #expect(rig.launched == [2], "build, waived at its creation, starts")
        #expect(rig.state.snapshot(of: 2)?.approval?.verdict == .waived)
        rig.exit(2, at: 11)
        #expect(rig.launched == [2, 1])
        // A later trigger carrying the old definition (decided against the older config) waits for nothing either.
        rig.exit(1, at: 11.5)
        _ = Self.trigger(&rig, deploy, ref: "v2", at: 12)
        #expect(rig.launched == [2, 1, 4], "its build (run 4) waived too, started")
        rig.exit(4, at: 13)
        #expect(rig.launched == [2, 1, 4, 3])
        #expect(approvals(rig).dropFirst().allSatisfy { $0.verdict == .waived }, "\(approvals(rig))")
    }

    @Test("recovery after the config added approve: a run queued before, never started, arms a wait, written; one approved runs (review item 3)")
    func recoveredRuleNew() {
        var rig = Rig()
        rig.at(100)
        var unfinished = Self.left(1, ApprovalState(by: [], until: nil))
        unfinished.run.approval = nil
        rig.handle(.recover(100, [RecoveredRun(unfinished, action: Self.deploy())]))
        #expect(rig.launched.isEmpty && rig.state.snapshot(of: 1)?.approval?.isWaiting == true)
        #expect(approvals(rig) == [ApprovalState(by: ["group:ops"], until: Rig.start + .seconds(3_700))], "the wait is written, its timeout from now")
        _ = Self.decide(&rig, 1, by: Self.bob)
        #expect(rig.launched == [1])
    }

    @Test("recovery: a run left waiting waits again, its timeout counted from its creation; one approved goes on")
    func recovered() {
        let action = Self.deploy()
        var rig = Rig()
        rig.at(100)
        let waiting = Self.left(1, ApprovalState(by: ["group:ops"], until: Rig.start + .seconds(3_600)))
        let approved = Self.left(2, ApprovalState(by: ["group:ops"], until: Rig.start + .seconds(3_600), verdict: .approved, decidedBy: "bob"),
                                 key: "other")
        rig.handle(.recover(100, [RecoveredRun(waiting, action: action), RecoveredRun(approved, action: action)]))
        #expect(rig.launched == [2] && rig.state.snapshot(of: 1)?.approval?.isWaiting == true)
        #expect(rig.timers[1]?[.approval] == Rig.start + .seconds(3_600))
        _ = Self.decide(&rig, 1, by: Self.bob)
        #expect(rig.launched == [2, 1])
    }

    static func left(_ id: Int64, _ approval: ApprovalState, key: String = "deploy") -> UnfinishedRun {
        var run = RunSnapshot(id: id, action: "deploy", key: key, phase: .queued, policy: .reject, params: ["ref": "v1"],
                              trigger: Peer(uid: 1001, gid: 50, pid: 1), queuedAt: Rig.start)
        run.approval = approval
        return UnfinishedRun(run: run, lastSeq: 1)
    }

    @Test("approvals lists the runs waiting for the caller's yes: not their own, not another group's, not decided ones")
    func listed() {
        var rig = Rig()
        _ = Self.trigger(&rig, Self.deploy(), by: 1001, at: 0)
        var other = Self.deploy()
        other.name = "other"
        _ = Self.trigger(&rig, other, by: 1002, at: 0)
        #expect(rig.state.awaitingApproval(by: Self.alice).map(\.id) == [2])
        #expect(rig.state.awaitingApproval(by: Self.bob).map(\.id) == [1])
        #expect(rig.state.awaitingApproval(by: Self.eve).isEmpty)
        _ = Self.decide(&rig, 2, by: Self.alice)
        #expect(rig.state.awaitingApproval(by: Self.alice).isEmpty)
    }

    @Test("on: { awaiting } announces a waiting run: its hook run is made in the item that makes the run, told the run (phase queued)")
    func awaitingHook() throws {
        var announced = Self.deploy()
        let chat = Action(name: "chat", exec: ["true"], policy: .queue)
        announced.hooks.targets[.awaiting] = HookTarget(action: chat, params: [:])
        var rig = Rig()
        _ = Self.trigger(&rig, announced, at: 0)
        let made = rig.written.compactMap { if case let .created(run, _) = $0 { run } else { nil } }
        #expect(made.map(\.action) == ["deploy", "chat"])
        #expect(made.last?.hook == HookCause(run: 1, action: "deploy", event: .awaiting))
        #expect(rig.launched == [2], "the announcement runs; the run it announces waits")
        _ = Self.decide(&rig, 1, by: Self.bob)
        #expect(rig.launched == [2, 1] && rig.written.filter { if case .created = $0 { true } else { false } }.count == 2, "approving announces nothing more")
    }
}

/// Group principals of the team's dashboard share one uid: "self" is then the person the run's `via` names.
@Suite("Approvals by group principals")
struct GroupPrincipalApprovalTests {
    static let rule = ApprovalRule(by: ["group:ops"], approvers: AccessRule(groups: [60_100]))

    static func run(via: String?) -> RunSnapshot {
        var run = RunSnapshot(id: 1, action: "deploy", key: "deploy", phase: .queued, policy: .reject, params: [:],
                              trigger: Peer(uid: Peer.groupPrincipalUID, gid: 60_100, pid: 9), queuedAt: Timestamp(microseconds: 0))
        run.via = via
        return run
    }

    static func approver(_ name: String) -> Approver { Approver(uid: Peer.groupPrincipalUID, name: name, groups: [60_100]) }

    @Test("another person of the same group may approve; the one who triggered may not, by any group; a run with no name stays refused")
    func selfByName() {
        let run = Self.run(via: "carol@example.org via group:ops")
        #expect(Self.rule.refusal(Self.approver("dave@example.org via group:ops"), of: run) == nil)
        #expect(Self.rule.refusal(Self.approver("carol@example.org via group:ops"), of: run)?.contains("may not approve it") == true)
        #expect(Self.rule.refusal(Self.approver("carol@example.org via group:ops"), of: Self.run(via: "carol@example.org via group:staff"))?
            .contains("may not approve it") == true)
        #expect(Self.rule.refusal(Self.approver("dave@example.org via group:ops"), of: Self.run(via: nil))?.contains("may not approve it") == true)
    }

    @Test("review item 2: the one who triggered may not approve under their name in another case (the map ignores case)")
    func selfInAnotherCase() {
        let run = Self.run(via: "carol@example.org via group:ops")
        #expect(Self.rule.refusal(Self.approver("Carol@Example.ORG via group:ops"), of: run)?.contains("may not approve it") == true)
        #expect(Self.rule.refusal(Self.approver("carol@example.org via group:ops"), of: Self.run(via: "CAROL@example.org via group:staff"))?
            .contains("may not approve it") == true)
        #expect(Self.rule.refusal(Self.approver("Dave@example.org via group:ops"), of: run) == nil)
    }
}
