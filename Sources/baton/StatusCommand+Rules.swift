import BatonCore

extension StatusCommand {
    /// The rules around an action's runs, one line each: what its outcomes trigger
    /// (`deploy: on failure: page-oncall, on change: notify`) and, with a cooldown, each key
    /// still inside its window (`deploy: cooldown 10m: last success 2m ago (run 7), nothing runs for 8m`)
    /// or that none is.
    static func rules(_ action: ActionInfo, now: Timestamp) -> [String] {
        var lines: [String] = []
        if let hooks = action.hooks, !hooks.named.isEmpty {
            let named = hooks.named.map { "on \($0.event.rawValue): \($0.action)" }.joined(separator: ", ")
            lines.append("\(action.name): \(named)" + (hooks.chain == true ? " (for its hook runs too)" : ""))
        }
        if let window = action.cooldown {
            let cooldown = "cooldown " + RunCommand.roundWindow(DurationText.format(.microseconds(window)))
            let cooling = (action.cooling ?? []).compactMap { run in run.endedAt.map { (run, $0) } }
            if cooling.isEmpty { lines.append("\(action.name): \(cooldown): no success inside it, a trigger runs") }
            for (run, ended) in cooling {
                // batond measured the window on a clock no one steps: its end, not the success's wall time, says what is left.
                let left = min(max((run.coolsUntil ?? ended + .microseconds(window)) - now, .zero), .microseconds(window))
                let ago = DurationText.format(.microseconds(window) - left) + " ago"
                lines.append("\(run.key): \(cooldown): last success \(ago) (run \(run.id)), nothing runs for \(DurationText.format(left))")
            }
        }
        if let needs = action.needs, !needs.isEmpty {
            lines.append("\(action.name): needs \(needs.joined(separator: ", ")) (each run starts once their runs succeeded)")
        }
        return lines + rate(action, now: now) + line(action, now: now)
    }

    /// The rate limit and what is left of it: `deploy: rate limit 10 runs per 1h00m per key
    /// (refuses the rest): 7 left; the oldest start leaves the window in 38m`, one line per key
    /// with recent starts, or one saying every key has all its runs.
    static func rate(_ action: ActionInfo, now: Timestamp) -> [String] {
        guard let rate = action.rateLimit else { return [] }
        let limit = RateLimit(runs: rate.runs, per: .microseconds(rate.per), scope: RateLimit.Scope(rawValue: rate.scope) ?? .key,
                              over: RateLimit.Over(rawValue: rate.over) ?? .reject)
        let head = "rate limit \(limit.text) (\(limit.over == .reject ? "refuses" : "delays") the rest)"
        let used = rate.used ?? []
        if used.isEmpty { return ["\(action.name): \(head): \(rate.runs) left\(limit.scope == .key ? " for every key" : "")"] }
        return used.map { use in
            let frees = use.frees.map { "; the oldest start leaves the window in " + DurationText.format(max(Timestamp(rawValue: $0) - now, .zero)) } ?? ""
            return "\(use.key): \(head): \(use.left) left\(frees)"
        }
    }

    /// Each key's line of follow-ups, in the order they start (`deploy: line (3 at most): 1. run 8
    /// ref=b, queued 12s ago; 2. run 9 ref=c, queued 3s ago`); none for a key with no one waiting.
    static func line(_ action: ActionInfo, now: Timestamp) -> [String] {
        let waiting = (action.inFlight ?? []).filter { $0.phase == .queued && $0.line != nil }
        let keys = Dictionary(grouping: waiting, by: \.key)
        return keys.keys.sorted().map { key in
            let entries = keys[key]!.sorted { ($0.line ?? 0) < ($1.line ?? 0) }.map { run in
                let params = run.params.sorted { $0.key < $1.key }.map { "\($0.key)=\(Terminal.visible($0.value))" }
                return (["\(run.line!). run \(run.id)"] + params).joined(separator: " ") + ", queued " + Format.age(run.queuedAt, now: now)
            }
            let depth = action.queueDepth.map { " (\($0) at most)" } ?? ""
            return "\(key): line\(depth): " + entries.joined(separator: "; ")
        }
    }
}
