import BatonCore

// The terminal copy of each value the CLI shows people: every text field through
// `Terminal.visible`, numbers and enums as they are. Renderers take these copies; JSON and CSV
// take the values themselves.

extension RunSnapshot {
    /// This run with each text (action, key, params, reason, error, host, via, progress message, approval) as a terminal shows it.
    var forTerminal: RunSnapshot {
        var copy = self
        // One new storage for the whole copy (a setter makes one a field).
        copy.update { run in
            run.action = Terminal.visible(action)
            run.key = Terminal.visible(key)
            run.params = Terminal.visible(params)
            run.reason = reason.map(Terminal.visible)
            run.error = error.map(Terminal.visible)
            run.host = host.map(Terminal.visible)
            run.via = via.map(Terminal.visible)
            run.progress?.message = progress?.message.map(Terminal.visible)
            run.needs = needs?.map { NeededRun(action: Terminal.visible($0.action), run: $0.run, phase: $0.phase, reason: $0.reason.map(Terminal.visible)) }
            run.neededBy = neededBy?.map { NeededRun(action: Terminal.visible($0.action), run: $0.run, phase: $0.phase, reason: $0.reason.map(Terminal.visible)) }
            if var approval {
                approval.by = approval.by.map(Terminal.visible)
                approval.decidedBy = approval.decidedBy.map(Terminal.visible)
                approval.reason = approval.reason.map(Terminal.visible)
                run.approval = approval
            }
            if var waiting {
                waiting.lock = Terminal.visible(waiting.lock)
                for index in waiting.holders.indices { waiting.holders[index].action = Terminal.visible(waiting.holders[index].action) }
                for index in waiting.ahead.indices { waiting.ahead[index].action = Terminal.visible(waiting.ahead[index].action) }
                run.waiting = waiting
            }
        }
        return copy
    }
}

extension Transition {
    /// This transition with its reason, via and error as a terminal shows them.
    var forTerminal: Transition {
        var transition = self
        transition.detail.reason = detail.reason.map(Terminal.visible)
        transition.detail.via = detail.via.map(Terminal.visible)
        transition.detail.error = detail.error.map(Terminal.visible)
        transition.detail.locks = detail.locks?.map(Terminal.visible)
        return transition
    }
}

extension TriggerRecord {
    /// This trigger with its action, key, params and via as a terminal shows them.
    var forTerminal: TriggerRecord {
        var record = self
        record.action = Terminal.visible(action)
        record.key = Terminal.visible(key)
        record.params = Terminal.visible(params)
        record.via = via.map(Terminal.visible)
        return record
    }
}

extension RunDetail {
    /// The story's run, transitions and triggers as a terminal shows them; the output stays bytes
    /// (`ShowCommand.story` makes each of its lines visible, and `show --output` prints it raw).
    var forTerminal: RunDetail {
        var detail = RunDetail(run: run.forTerminal, transitions: transitions.map(\.forTerminal), triggers: triggers.map(\.forTerminal),
                               output: output, outputTruncated: outputTruncated)
        detail.hookRuns = hookRuns?.map(\.forTerminal)
        detail.outputTotals = outputTotals
        return detail
    }
}

extension ActionInfo {
    /// This action with its name, description, argv, params and the runs it lists as a terminal shows them.
    var forTerminal: ActionInfo {
        var action = self
        action.name = Terminal.visible(name)
        action.description = description.map(Terminal.visible)
        action.exec = exec.map(Terminal.visible)
        let shown = { (text: String?) in text.map(Terminal.visible) == text }
        if !params.allSatisfy({ shown($0.key) && shown($0.value.pattern) && shown($0.value.default) }) {
            action.params = Dictionary(params.map { name, info in
                (Terminal.visible(name), ParamInfo(pattern: info.pattern.map(Terminal.visible), default: info.default.map(Terminal.visible)))
            }, uniquingKeysWith: { first, _ in first })
        }
        action.keyParams = keyParams.map(Terminal.visible)
        action.inFlight = inFlight?.map(\.forTerminal)
        action.last = last?.forTerminal
        action.cooling = cooling?.map(\.forTerminal)
        action.hooks = hooks.map { HookNames(failure: $0.failure.map(Terminal.visible), success: $0.success.map(Terminal.visible),
                                             change: $0.change.map(Terminal.visible), chain: $0.chain) }
        return action
    }
}

extension ActionStats {
    /// These figures with the action's name as a terminal shows it.
    var forTerminal: ActionStats {
        var stats = self
        stats.action = Terminal.visible(action)
        return stats
    }
}

extension PruneReport {
    /// These counts with the actions' names as a terminal shows them.
    var forTerminal: PruneReport {
        var report = self
        report.removed = Dictionary(removed.map { (Terminal.visible($0.key), $0.value) }, uniquingKeysWith: +)
        return report
    }
}

extension Terminal {
    /// Names and values as a terminal shows them. Two names that look alike once escaped (a
    /// control character and its written escape) keep the first; batond takes neither as a param name.
    static func visible(_ map: [String: String]) -> [String: String] {
        if map.allSatisfy({ visible($0.key) == $0.key && visible($0.value) == $0.value }) { return map }
        return Dictionary(map.map { (visible($0.key), visible($0.value)) }, uniquingKeysWith: { first, _ in first })
    }
}
