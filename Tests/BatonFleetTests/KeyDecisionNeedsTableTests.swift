import BatonCore
@testable import BatonFleet
import Testing

/// A trigger whose new run needs an action that would refuse its own trigger now is refused
/// before anything is stopped or made (`KeyDecision.needRefusal`, audit D1). One table, run
/// twice: as one machine decides (the trigger's `KeyDecision.decide`, then the rule on the needed
/// keys' facts as a host's flights give them) and through the fleet's trigger batch on the rows
/// its transaction reads (`TriggerBatch.Rows`). `deploy` needs `build`; `build` needs `compile`
/// where a row says so.
@Suite("KeyDecision: a need that would be refused refuses the trigger, for a host and the fleet")
struct KeyDecisionNeedsTableTests {
    static let now = Timestamp(rawValue: 100_000_000)
    static let pause = ActionPause(action: "build", by: "alice", reason: "migrating db", at: Timestamp(rawValue: 90_000_000))
    static let compilePause = ActionPause(action: "compile", by: "bob", reason: "new compiler", at: Timestamp(rawValue: 90_000_000))
    static let heldPause = ActionPause(action: "build", by: "alice", reason: "r", at: Timestamp(rawValue: 90_000_000), hold: true)
    static let minutely = RateLimit(runs: 1, per: .seconds(60))
    /// build's one start inside the window: ten seconds ago.
    static let start = Timestamp(rawValue: 90_000_000)

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// The params deploy's need gives build.
        var needParams: [String: String] = [:]
        var paused: ActionPause?
        var rate: RateLimit?
        var cooldown: Duration?
        var lastSuccess: KeyDecision.LastSuccess?
        /// build's key held by run 7, in this phase.
        var held: Phase?
        /// build needs compile, paused.
        var deeper = false
        /// deploy's own key held by run 3 (deploy's policy rejects).
        var deployHeld = false
        var expected: KeyDecision.NeedRefusal?
        var testDescription: String { name }

        var compile: Action { Action(name: "compile", exec: ["true"]) }

        var build: Action {
            var build = Action(name: "build", exec: ["true"])
            build.rateLimit = rate
            build.cooldown = cooldown
            if deeper { build.needs = [NeedTarget(action: compile, params: [:])] }
            return build
        }

        var trigger: Trigger {
            var deploy = Action(name: "deploy", exec: ["true"])
            deploy.needs = [NeedTarget(action: build, params: needParams)]
            return Trigger(action: deploy, key: "deploy", policy: .reject, params: [:], peer: nil)
        }

        var bucket: RateBucket { RateBucket(starts: rate == nil ? [] : [KeyDecisionNeedsTableTests.start]) }

        /// A key's facts as a host's flights give them (`ConductorState.keyFacts`).
        func facts(_ key: String, _ action: Action) -> KeyFacts {
            var facts = KeyFacts(slot: KeySlot(), now: KeyDecisionNeedsTableTests.now)
            switch key {
            case "deploy" where deployHeld:
                facts.slot = KeySlot(holder: 3)
                facts.runs[3] = KeyFacts.Run(phase: .loading, lastSeq: 2)
            case "build":
                facts.pause = paused
                facts.lastSuccess = lastSuccess
                facts.rate = action.rateClaim(key: key).map { bucket.rate($0, key: key, at: facts.now) }
                if let held {
                    facts.slot = KeySlot(holder: 7)
                    facts.runs[7] = KeyFacts.Run(phase: held, lastSeq: 2)
                }
            case "compile":
                facts.pause = deeper ? KeyDecisionNeedsTableTests.compilePause : nil
            default: break
            }
            return facts
        }

        /// The same facts as the fleet's transaction reads them.
        var rows: TriggerBatch.Rows {
            var rows = TriggerBatch.Rows(now: KeyDecisionNeedsTableTests.now)
            if deployHeld {
                rows.slots["deploy"] = KeySlot(holder: 3)
                rows.runs[3] = TriggerBatch.RunFacts(phase: .loading, lastSeq: 2, owner: "other")
            }
            if let held {
                rows.slots["build"] = KeySlot(holder: 7)
                rows.runs[7] = TriggerBatch.RunFacts(phase: held, lastSeq: 2, owner: "other")
            }
            rows.pauses["build"] = paused
            if deeper { rows.pauses["compile"] = KeyDecisionNeedsTableTests.compilePause }
            rows.lastSuccess["build"] = lastSuccess
            if let claim = build.rateClaim(key: "build") { rows.rates[claim.bucket] = bucket }
            return rows
        }
    }

    static func refused(_ target: String, key: String? = nil, params: [String: String] = [:], _ error: BatonError,
                        _ record: TriggerRecord.Decision?) -> KeyDecision.NeedRefusal {
        KeyDecision.NeedRefusal(target: target, key: key ?? target, params: params, error: error, record: record)
    }

    static let cases: [Case] = [
        Case(name: "build free: nothing refused, deploy's run is made"),
        Case(name: "build paused: refused paused, recorded paused against build", paused: pause,
             expected: refused("build", .paused(pause), .paused)),
        Case(name: "build paused, its run in flight: still refused (a pause comes first)", paused: pause, held: .loading,
             expected: refused("build", .paused(pause), .paused)),
        Case(name: "build held (pause --hold): its run would be made and wait, nothing refused", paused: heldPause),
        Case(name: "build over its rate limit: refused rate_limited with when it may run, recorded against build", rate: minutely,
             expected: refused("build", .rateLimited(action: "build", limit: minutely, next: start + .seconds(60)), .rateLimited)),
        Case(name: "build over its rate limit, its run in flight: joined, nothing refused", rate: minutely, held: .loading),
        Case(name: "build over its rate limit (over: delay): its run would wait, nothing refused",
             rate: RateLimit(runs: 1, per: .seconds(60), over: .delay)),
        Case(name: "build inside its cooldown: the success serves, nothing refused", cooldown: .seconds(60),
             lastSuccess: .init(run: 5, at: Timestamp(rawValue: 95_000_000))),
        Case(name: "a param build refuses: refused bad_request naming the need, not recorded", needParams: ["nope": "x"],
             expected: refused("build", key: "build", .badRequest("needs build: action build takes no params, got nope"), nil)),
        Case(name: "build would be made and needs compile, paused: refused naming compile", deeper: true,
             expected: refused("compile", .paused(compilePause), .paused)),
        Case(name: "build in flight (joined) needs compile, paused: nothing refused (its run is made already)", held: .loading, deeper: true),
        Case(name: "deploy's own key busy (reject): busy first, its needs are not asked", paused: pause, deployHeld: true),
    ]

    @Test("one machine: the trigger's decision, then the rule on the needed keys' facts", arguments: cases)
    func host(_ row: Case) {
        let trigger = row.trigger
        var slot = row.facts("deploy", trigger.action).slot
        let decided = KeyDecision.decide(KeyDecision.Asked(trigger), row.facts("deploy", trigger.action), slot: &slot, candidate: { 50 })
        guard case .created = decided else {
            #expect(row.expected == nil && row.deployHeld, "deploy's trigger decided \(decided)")
            return
        }
        #expect(KeyDecision.needRefusal(trigger.action, params: trigger.params, at: Self.now, facts: row.facts) == row.expected)
    }

    @Test("the fleet's batch: the same refusal, as the entry's outcome, no run made and no id taken", arguments: cases)
    func fleet(_ row: Case) {
        let draft = TriggerBatch.decide([TriggerBatch.Entry(trigger: row.trigger)], row.rows, me: "me")
        let decided = draft.taking(draft.ids == 0 ? [] : [50])
        switch decided.outcomes.first {
        case let .needRefused(refusal)?:
            #expect(refusal == row.expected)
            #expect(draft.ids == 0 && decided.slots.isEmpty && decided.starts.isEmpty, "a refused trigger made or held something")
        case .created?:
            #expect(row.expected == nil && draft.ids == 1)
        case let other:
            #expect(row.expected == nil && row.deployHeld, "got \(String(describing: other))")
        }
    }

    @Test("the keys the rule may read: each needed key, recursively, once; none for an action without needs")
    func neededKeys() {
        let row = Case(name: "", deeper: true)
        #expect(KeyDecision.needed(by: row.trigger.action, params: [:]).map(\.key) == ["build", "compile"])
        #expect(KeyDecision.needed(by: row.build.needs[0].action, params: [:]).isEmpty)
        let opening = TriggerBatch.opening([TriggerBatch.Entry(trigger: row.trigger)])
        #expect(opening.statements[2].parameters == [#"{"build","compile","deploy"}"#])
    }

    @Test("a hook's keys, locked by the end's transaction with its own in key order, include the keys its needs are decided on")
    func hookLocksNeededKeys() {
        let row = Case(name: "", deeper: true)
        #expect(FleetHooks.locked(HookTarget(action: row.trigger.action, params: [:])) == ["deploy", "build", "compile"])
        #expect(FleetHooks.locked(HookTarget(action: row.compile, params: [:])) == ["compile"])
    }

    @Test("a trigger of an action without needs opens its batch with its own key and action only")
    func noNeedsReadsNoMore() {
        let trigger = Trigger(action: Action(name: "deploy", exec: ["true"]), key: "deploy", policy: .reject, params: [:], peer: nil)
        let opening = TriggerBatch.opening([TriggerBatch.Entry(trigger: trigger)])
        #expect(opening.statements[2].parameters == [#"{"deploy"}"#])
        #expect(opening.statements[opening.pauses].parameters == [#"{"deploy"}"#])
        #expect(opening.rates.isEmpty && opening.lastSuccess == nil)
    }
}
