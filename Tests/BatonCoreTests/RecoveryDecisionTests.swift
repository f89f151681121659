@testable import BatonEngine
import Testing

/// What recovery does with one unfinished run (`RecoveryDecision`), for a host's restart and a
/// fleet host's takeover alike: a run that may have started is never queued again unasked.
@Suite("Recovery decision")
struct RecoveryDecisionTests {
    typealias Facts = RecoveryDecision.Facts

    @Test("the decision, fact by fact", arguments: [
        // A queued run never started (its process starts once its loading is durable): queued again.
        (Facts(phase: .queued), RecoveryDecision.requeue(restarted: false)),
        (Facts(phase: .queued, restarts: true), .requeue(restarted: false)),
        // Its attempt may have started: its process is gone, it ends interrupted; never run again unasked.
        (Facts(phase: .loading), .interrupt),
        (Facts(phase: .retrying), .interrupt),
        // ...unless its action says `onInterrupt: "restart"`.
        (Facts(phase: .loading, restarts: true), .requeue(restarted: true)),
        (Facts(phase: .retrying, restarts: true), .requeue(restarted: true)),
        // Its shim outlived batond: adopted, whatever else the action says.
        (Facts(phase: .loading, surviving: true, restarts: true, secret: true), .adopt),
        // A surviving shim of a run the history does not call loading is not adopted.
        (Facts(phase: .queued, surviving: true), .requeue(restarted: false)),
        // Waiting to retry, nothing lost: it goes on waiting.
        (Facts(phase: .retrying, mayResumeRetrying: true, restarts: true), .resumeRetrying),
        // It would start (again) without its secret param's value: it ends, reason secret.
        (Facts(phase: .queued, secret: true), .endSecret),
        (Facts(phase: .loading, restarts: true, secret: true), .endSecret),
        // A secret does not matter to a run that ends interrupted anyway.
        (Facts(phase: .loading, secret: true), .interrupt),
        // A stop (a replace's, a cancel's) asked before its end was recorded: it ends as the stop says,
        // neither restarted, resumed, nor ended for its secret or its action gone.
        (Facts(phase: .loading, restarts: true, stopped: true), .endStopped),
        (Facts(phase: .retrying, mayResumeRetrying: true, restarts: true, stopped: true), .endStopped),
        (Facts(phase: .loading, restarts: true, secret: true, stopped: true), .endStopped),
        (Facts(phase: .loading, actionKnown: false, stopped: true), .endStopped),
        // ...but a surviving shim is adopted still, and a queued run knows no such stop.
        (Facts(phase: .loading, surviving: true, stopped: true), .adopt),
        (Facts(phase: .queued, stopped: true), .requeue(restarted: false)),
        // The action is gone: dropped, whatever else.
        (Facts(phase: .loading, actionKnown: false, surviving: true), .drop),
        (Facts(phase: .queued, actionKnown: false), .drop),
        // A definition this host refuses (a fleet's): what would start ends `definition`; a loading run is lost;
        // a stop asked of it comes first.
        (Facts(phase: .queued, refused: true), .endRefused),
        (Facts(phase: .retrying, mayResumeRetrying: true, refused: true), .endRefused),
        (Facts(phase: .loading, restarts: true, refused: true), .interrupt),
        (Facts(phase: .loading, stopped: true, refused: true), .endStopped),
    ])
    func decide(_ facts: Facts, _ expected: RecoveryDecision) {
        #expect(RecoveryDecision.decide(facts) == expected)
    }
}

extension RecoveryDecisionTests {
    /// A debounced run that recovery queues again (one machine's restart, a fleet host's takeover
    /// alike): a window from the recovery, as far as `maxWait` from its creation allows.
    @Test("a recovered run's debounce window, in seconds: queued at, recovered at, deadline (nil: no window)", arguments: [
        (Int64(0), Int64(2), Int64?(7)),   // inside its first window: a whole window from the recovery
        (0, 20, 25),                       // long after: a whole window still
        (0, 48, 50),                       // maxWait (50 s) from its creation caps it
        (0, 60, 50),                       // past maxWait: due at once
    ])
    func window(_ queued: Int64, _ recovered: Int64, _ deadline: Int64?) {
        var action = Action(name: "ci", exec: ["x"])
        action.debounce = .seconds(5)
        action.maxWait = .seconds(50)
        let at = { (seconds: Int64) in Timestamp(rawValue: 1_000_000_000_000 + seconds * 1_000_000) }
        let window = RecoveryDecision.window(action, queuedAt: at(queued), at: at(recovered))
        #expect(window?.deadline == deadline.map(at))
        #expect(RecoveryDecision.window(Action(name: "plain", exec: ["x"]), queuedAt: at(queued), at: at(recovered)) == nil)
    }
}

extension RecoveryDecisionTests {
    /// One row of `RecoveryDecision.facts`: the run's phase, what its action says, and what is known of it.
    struct FactsRow: Sendable, CustomTestStringConvertible {
        var phase: Phase
        var restart = false, survives = true, secret = false, known = true, refused = false
        var due = false, marked = false, draining = false, hook = false
        var expected: RecoveryDecision
        /// Whether `draining` may be asked: only where a restart or a resume hangs on it.
        var asksDraining = false
        var testDescription: String { "\(phase) restart:\(restart) survives:\(survives) due:\(due) marked:\(marked) draining:\(draining) → \(expected)" }
    }

    static let factsRows: [FactsRow] = [
        FactsRow(phase: .queued, restart: true, draining: true, expected: .requeue(restarted: false)),
        FactsRow(phase: .loading, expected: .interrupt),
        FactsRow(phase: .loading, restart: true, expected: .requeue(restarted: true), asksDraining: true),
        // A replace stopping it: its replacement waits for its end; neither restarted nor resumed.
        FactsRow(phase: .loading, restart: true, draining: true, expected: .interrupt, asksDraining: true),
        FactsRow(phase: .retrying, due: true, expected: .resumeRetrying, asksDraining: true),
        FactsRow(phase: .retrying, due: true, draining: true, expected: .interrupt, asksDraining: true),
        // Resumed only where its next attempt's due time is known, its action outlives batond, no hook made it.
        FactsRow(phase: .retrying, expected: .interrupt),
        FactsRow(phase: .retrying, survives: false, due: true, expected: .interrupt),
        FactsRow(phase: .retrying, due: true, hook: true, expected: .interrupt),
        FactsRow(phase: .retrying, secret: true, due: true, expected: .interrupt),
        FactsRow(phase: .queued, secret: true, expected: .endSecret),
        // The mark the history keeps (`UnfinishedRun.stop`) is the stop.
        FactsRow(phase: .retrying, due: true, marked: true, expected: .endStopped, asksDraining: true),
        // A refused definition is a known action, refused.
        FactsRow(phase: .queued, known: false, refused: true, expected: .endRefused),
        FactsRow(phase: .queued, known: false, expected: .drop),
    ]

    @Test("the facts of an unfinished run, for one machine's recovery and a fleet's takeover alike", arguments: factsRows)
    func facts(_ row: FactsRow) {
        let run = RunSnapshot(id: 3, action: "a", key: "a", phase: row.phase, policy: .reject, params: [:],
                              trigger: Peer(uid: 0, gid: 0, pid: 1), queuedAt: Timestamp(rawValue: 1_000))
        var unfinished = UnfinishedRun(run: run, lastSeq: 2, hook: row.hook ? HookContext(cause: HookCause(run: 1, action: "b", event: .failure), run: run, output: []) : nil)
        unfinished.run.attempts = row.phase == .queued ? 0 : 1
        unfinished.retryDue = row.due ? Timestamp(rawValue: 2_000) : nil
        unfinished.stop = row.marked ? .cancelled(by: 0) : nil
        var action = Action(name: "a", exec: ["x"])
        action.onInterrupt = row.restart ? .restart : .fail
        action.survivesRestart = row.survives
        if row.secret { action.params = ["s": ParamSpec(secret: true)] }
        var asked = false
        let facts = RecoveryDecision.facts(unfinished, action: row.known ? action : nil, refused: row.refused, draining: {
            asked = true
            return row.draining
        })
        #expect(RecoveryDecision.decide(facts) == row.expected)
        #expect(asked == row.asksDraining, "the key's draining asked \(asked ? "where nothing hangs on it" : "not asked")")
    }
}
