import BatonCore

extension Backend {
    /// How far back a failure streak is counted at start: a longer streak shows as this long.
    static let streakLookback = 1_000

    /// Seeds the dead-man series of every configured action from the history, so that a restart
    /// neither forgets when backup last succeeded nor restarts its failure streak at zero. A history
    /// that cannot be read leaves them to the runs that end from now on, and says so.
    static func seedDeadMan(_ history: any HistoryReader, actions: [String], metrics: Metrics) async {
        do throws(BatonError) {
            for action in actions {
                let recent = try await history.runs(HistoryFilter(actions: [action], phases: [.success, .failure, .cancelled],
                                                                  limit: streakLookback))
                var latest: [RunSnapshot] = []
                for phase in [Phase.success, .failure, .cancelled] {
                    latest += try await history.runs(HistoryFilter(actions: [action], phases: [phase], limit: 1))
                }
                metrics.seed(action, recent: recent, latest: latest)
            }
        } catch {
            Log.warning("cannot read the history for the last-success metrics: \(error.message); they start from the next run's end")
        }
    }

    /// How many of an action's latest successes are looked at for the keys' cooldowns at start.
    static let cooldownLookback = 1_000

    /// Seeds the last success of each key of the actions with a cooldown from the history, so
    /// that a restart does not forget a window: a trigger right after it still runs nothing.
    static func seedCooldowns(_ history: any HistoryReader, actions: [Action], conductor: Conductor) async throws(BatonError) {
        for action in actions where action.cooldown != nil {
            let successes = try await history.runs(HistoryFilter(actions: [action.name], phases: [.success], limit: cooldownLookback))
            conductor.remember(successes: successes)
        }
    }

    /// Seeds the starts inside each rate-limited action's window from the history, so that a
    /// restart keeps counting them: the runs it started in the last `per` still count.
    static func seedRateStarts(_ history: any HistoryReader, actions: [Action], conductor: Conductor) async throws(BatonError) {
        let now = Timestamp.now
        for action in actions {
            guard let limit = action.rateLimit else { continue }
            // By when each started, whenever it was queued (a delayed run waits), over every key.
            let runs = try await history.started(action.name, since: now + (.zero - limit.per))
            conductor.remember(starts: runs.filter { $0.startedAt.map { now - $0 < limit.per } ?? false }, actions: [action.name: action])
        }
    }

    /// Seeds the failures in a row of each action with `pauseAfterFailures` from the history (those
    /// after its last pause or resume), so that a restart between two failures does not forget the first.
    /// Before recovery: the runs it ends (`interrupted`) count on from there, as any end does.
    static func seedFailureStreaks(_ history: any HistoryReader, actions: [Action], conductor: Conductor) async throws(BatonError) {
        for action in actions {
            guard let most = action.pauseAfterFailures else { continue }
            let runs = try await history.runs(HistoryFilter(actions: [action.name], phases: [.success, .failure], limit: most))
            let last = try await history.events(HistoryFilter(actions: [action.name], limit: 1)).first
            conductor.remember(failuresOf: action, runs: runs, since: last?.at)
        }
    }

    /// Seeds the runs of the latest schedule slots of each action from the history, so that a
    /// restart does not run a slot again (the database's unique index would refuse it anyway).
    static func seedSlots(_ history: any HistoryReader, actions: [Action], conductor: Conductor) async throws(BatonError) {
        for action in actions {
            let runs = try await history.runs(HistoryFilter(actions: [action.name], limit: SlotBook.kept))
            conductor.remember(slots: runs.filter { $0.slot != nil })
        }
    }

    /// Seeds the last outcome of each key of the actions with a `change` hook from the history,
    /// so that the first end after a restart is compared with the run before it.
    static func seedOutcomes(_ history: any HistoryReader, actions: [Action], conductor: Conductor) async throws(BatonError) {
        for action in actions where action.hooks.targets[.change] != nil {
            let runs = try await history.runs(HistoryFilter(actions: [action.name], phases: [.success, .failure], limit: cooldownLookback))
            conductor.remember(outcomes: runs)
        }
    }
}
