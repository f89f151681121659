@testable import baton
import BatonClient
import BatonCore
import Testing

/// How the CLI says the rules around a run: `status`'s hooks and cooldowns, and the decisions and
/// hooks `show` lists against a run.
@Suite("CLI: hooks, cooldowns and decisions")
struct RulesTextTests {
    static let context = Context(socketPath: "/tmp/none.sock", databasePath: nil, isTerminal: false, useColor: false)
    static let start = Timestamp(rawValue: 1_700_000_000_000_000)

    static func action(_ name: String) -> ActionInfo {
        ActionInfo(name: name, description: nil, exec: ["x"], policy: .join, policies: [], timeout: nil, params: [:], keyParams: [])
    }

    static func success(_ id: Int64, key: String, endedAgo seconds: Int64) -> RunSnapshot {
        let ended = start + .seconds(-seconds)
        return RunSnapshot(id: id, action: String(key.prefix { $0 != " " }), key: key, phase: .success, policy: .join, params: [:], trigger: nil,
                           queuedAt: ended + .seconds(-1), startedAt: ended + .seconds(-1), endedAt: ended)
    }

    static let rulesCases: [(name: String, action: ActionInfo, lines: [String])] = {
        var hooked = action("deploy")
        hooked.hooks = HookNames(failure: "page-oncall", change: "notify")
        var chained = action("page")
        chained.hooks = HookNames(success: "log", chain: true)
        var cooling = action("fresh")
        cooling.cooldown = 600_000_000
        cooling.cooling = [success(7, key: "fresh", endedAgo: 120)]
        var keyed = action("push")
        keyed.cooldown = 3_600_000_000
        keyed.cooling = [success(3, key: "push env=prod", endedAgo: 60), success(5, key: "push env=dev", endedAgo: 10)]
        var cooled = action("fresh")
        cooled.cooldown = 600_000_000
        cooled.cooling = []
        var both = cooling
        both.hooks = HookNames(failure: "page")
        // Issue 37, item 4: the wall clock stepped back 10 minutes after a success 2 minutes ago
        // (its end now 8 minutes in the future): batond measured the window and says when it closes.
        var stepped = action("cool")
        stepped.cooldown = 600_000_000
        var future = success(9, key: "cool", endedAgo: -480)
        future.coolsUntil = start + .seconds(480)
        stepped.cooling = [future]
        return [
            ("no rules", action("plain"), []),
            ("hooks, in failure, success, change order", hooked, ["deploy: on failure: page-oncall, on change: notify"]),
            ("chained hooks", chained, ["page: on success: log (for its hook runs too)"]),
            ("a key inside its cooldown", cooling, ["fresh: cooldown 10m: last success 2m00s ago (run 7), nothing runs for 8m00s"]),
            ("each key with its own window", keyed, [
                "push env=prod: cooldown 1h: last success 1m00s ago (run 3), nothing runs for 59m00s",
                "push env=dev: cooldown 1h: last success 10s ago (run 5), nothing runs for 59m50s",
            ]),
            ("a cooldown with no window open", cooled, ["fresh: cooldown 10m: no success inside it, a trigger runs"]),
            ("a wall clock stepped back: what batond measured, never a negative time", stepped,
             ["cool: cooldown 10m: last success 2m00s ago (run 9), nothing runs for 8m00s"]),
            ("hooks first, then the cooldown", both, [
                "fresh: on failure: page", "fresh: cooldown 10m: last success 2m00s ago (run 7), nothing runs for 8m00s",
            ]),
        ]
    }()

    @Test("status: one line per rule around an action's runs", arguments: rulesCases.indices)
    func rules(index: Int) {
        let row = Self.rulesCases[index]
        #expect(StatusCommand.rules(row.action, now: Self.start) == row.lines, "\(row.name)")
    }

    @Test("status: the rules follow the table, and a status without any is as before")
    func statusText() {
        var fresh = Self.action("fresh")
        fresh.cooldown = 600_000_000
        fresh.cooling = [Self.success(7, key: "fresh", endedAgo: 120)]
        fresh.last = fresh.cooling?.first
        let text = StatusCommand.text(BatonStatus(actions: [fresh, Self.action("plain")]), context: Self.context, now: Self.start, width: 200)
        #expect(text.hasSuffix("\n\nrules:\n  fresh: cooldown 10m: last success 2m00s ago (run 7), nothing runs for 8m00s\n"), "\(text)")
        let plain = StatusCommand.text(BatonStatus(actions: [Self.action("plain")]), context: Self.context, now: Self.start, width: 200)
        #expect(plain == "ACTION  STATE  LAST\nplain   idle   never run\n")
    }

    @Test("show: each decision recorded against a run says what it meant, with who or where it came from; and the hooks it fired")
    func decisions() {
        let run = Self.success(7, key: "fresh", endedAgo: 120)
        let record = { (decision: TriggerRecord.Decision, peer: Peer?, via: String?) in
            TriggerRecord(runID: 7, action: "fresh", key: "fresh", decision: decision, policy: .join, peer: peer, at: Self.start, params: [:], via: via)
        }
        var detail = RunDetail(run: run, transitions: [], triggers: [
            record(.cooled, Peer(uid: 0, gid: 0, pid: 9), nil), record(.cooled, nil, "the success hook of fresh run 6"),
            record(.joined, Peer(uid: 0, gid: 0, pid: 10), nil), record(.joined, nil, "webhook gh from 10.0.0.5, delivery d-2"),
            record(.joined, nil, nil),
        ], output: nil, outputTruncated: false)
        var hook = RunSnapshot(id: 8, action: "page", key: "page", phase: .success, policy: .reject, params: [:], trigger: nil, queuedAt: Self.start)
        hook.hook = HookCause(run: 7, action: "fresh", event: .success)
        detail.hookRuns = [hook]
        let story = ShowCommand.story(detail, context: Self.context)
        #expect(story.contains("\nother triggers: 2 cooled, 3 joined\n"), "\(story)")
        #expect(story.contains("  cooled (answered with this success inside the cooldown; nothing ran)  by root\n"), "\(story)")
        #expect(story.contains("  cooled (answered with this success inside the cooldown; nothing ran)  by the success hook of fresh run 6\n"), "\(story)")
        #expect(story.contains("  joined (shared this run's outcome)  by root\n"), "\(story)")
        #expect(story.contains("  joined (shared this run's outcome)  by webhook gh from 10.0.0.5, delivery d-2\n"), "\(story)")
        #expect(story.contains("  joined (shared this run's outcome)  from no peer (a hook or a webhook)\n"), "\(story)")
        #expect(story.contains("\nhooks fired:\n  success → page run 8, success\n"), "\(story)")
    }

    @Test("show: every decision has its words", arguments: [
        (TriggerRecord.Decision.joined, "joined (shared this run's outcome)"),
        (.coalesced, "coalesced (shared this follow-up's outcome)"),
        (.rejected, "rejected (busy: this run was in flight)"),
        (.cooled, "cooled (answered with this success inside the cooldown; nothing ran)"),
        (.slotRan, "scheduled slot already ran (answered with this run; nothing ran)"),
        (.debounced, "debounced (joined this pending run and pushed its start back)"),
        (.denied(.trigger), "denied trigger"),
    ])
    func words(decision: TriggerRecord.Decision, text: String) {
        #expect(ShowCommand.decided(decision) == text)
    }
}
