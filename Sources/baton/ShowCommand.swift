import BatonCore
import BatonStore
import FoundationEssentials

/// `baton show RUN`: the whole story of one run.
enum ShowCommand {
    static let spec = CommandSpec(
        name: "show",
        abstract: "Show the whole story of one run. Every transition with its time, who triggered it, params, the decisions recorded against it (joins, rejections, cooled triggers), the hooks it fired, the error and the output tail. Works when batond is down.",
        arguments: "RUN",
        options: [
            OptionSpec(long: "output", short: nil, value: nil, help: "print only the captured output, raw"),
            OptionSpec(long: "json", short: nil, value: nil, help: "print the run as JSON"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.count == 1, let id = Int64(arguments.positionals[0]) else {
            throw UsageError("baton show needs one RUN id (a number)")
        }
        guard let detail = try Query.show(id, context) else {
            throw Failure(code: ExitCode.usage, message: "no run \(id)", hint: "baton history")
        }
        if arguments.flag("output") {
            Stdio.output.write(detail.output ?? Data())
            return ExitCode.success
        }
        // The files it kept (a history from before artifacts, or a batond without them: none).
        let kept = (try? Query.artifacts(id, context)).flatMap { $0.files.isEmpty && $0.notices.isEmpty ? nil : $0 }
        if arguments.flag("json") {
            print(Format.json(ShownJSON(detail: detail, artifacts: kept)))
            return ExitCode.success
        }
        print(story(detail, context: context), terminator: "")
        if let list = kept {
            print("\nartifacts:\n" + ArtifactsCommand.listing(list).split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
        }
        return ExitCode.success
    }

    /// The story as a terminal shows it: every text from the run, and each line of its output, made visible.
    static func story(_ detail: RunDetail, context: Context) -> String {
        let detail = detail.forTerminal
        let run = detail.run
        var text = context.paint("run \(run.id)", .bold) + " — \(run.action) (key \(run.key)), \(Format.phaseWord(run))\n"
        // A group principal of the team's dashboard: its uid is no one's; its name is in `via`.
        if let peer = run.trigger, peer.uid != Peer.groupPrincipalUID || run.via == nil {
            text += "  triggered by \(Format.caller(peer)) with policy \(run.policy.rawValue)\n"
        } else if let via = run.via {
            text += "  triggered by \(via) with policy \(run.policy.rawValue)\n"
        }
        if let slot = run.slot { text += "  schedule slot \(Format.time(slot)) (\(Format.isoTime(slot, utc: true)))\n" }
        if !run.params.isEmpty {
            text += "  params: " + run.params.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ") + "\n"
        }
        text += "  attempts: \(run.attempts), took \(Format.duration(run))\n"
        if let used = Format.usage(run) { text += "  used: \(used)\n" }
        if let error = run.error { text += "  error: " + context.paint(error, .red) + "\n" }
        if let waiting = run.waiting { text += "  \(waiting.text)\n" }
        if let debouncing = Format.debouncing(run) { text += "  \(debouncing)\n" }
        if let needs = run.needs { text += "  needs: \(Format.needList(needs))\n" }
        if let neededBy = run.neededBy { text += "  needed by: \(Format.needList(neededBy))\n" }
        if let needing = Format.needing(run) { text += "  \(needing)\n" }
        if let approving = Format.approving(run) { text += "  \(approving)\n" }
        if let approval = run.approval, let decided = Format.approvalDecision(approval) { text += "  approval: \(decided)\n" }
        text += "\ntransitions:\n"
        var previous: Timestamp?
        for transition in detail.transitions {
            let delta = previous.map { "+" + DurationText.format(transition.at - $0) } ?? ""
            previous = transition.at
            var line = "  \(transition.seq). \(Format.time(transition.at))  \(Format.fit(delta, 8))  \(transition.from?.rawValue ?? "-") → \(transition.to.rawValue)"
            let notes = Format.notes(transition.detail)
            if !notes.isEmpty { line += "  (" + notes.joined(separator: "; ") + ")" }
            text += line + "\n"
        }
        if !detail.triggers.isEmpty {
            let counts = Dictionary(grouping: detail.triggers, by: \.decision).mapValues(\.count)
            text += "\nother triggers: " + counts.sorted { $0.key.description < $1.key.description }.map { "\($0.value) \($0.key)" }.joined(separator: ", ") + "\n"
            for trigger in detail.triggers.prefix(20) {
                // A webhook's or a hook's says where it came from, as a run it made would ("by webhook gh from …").
                let by = Format.principal(trigger.peer, via: trigger.via).map { "by " + $0 }
                    ?? trigger.peer.map { "by " + Format.userName($0.uid) } ?? trigger.via.map { "by " + $0 } ?? "from no peer (a hook or a webhook)"
                text += "  \(Format.time(trigger.at))  \(decided(trigger.decision))  \(by)\n"
            }
            if detail.triggers.count > 20 { text += "  … and \(detail.triggers.count - 20) more\n" }
        }
        if let hooks = detail.hookRuns, !hooks.isEmpty {
            text += "\nhooks fired:\n"
            for hook in hooks {
                text += "  \(hook.hook?.event.rawValue ?? "?") → \(hook.action) run \(hook.id), \(Format.phaseWord(hook))\n"
            }
        }
        if let totals = detail.outputTotals, totals.written > 0 {
            text += "\n" + outputTotals(totals) + "\n"
        }
        if let output = detail.output, !output.isEmpty {
            text += "\noutput\(detail.outputTruncated ? " (last \(output.count) bytes)" : ""):\n"
            // Split at LF bytes: as Characters, CR LF is one that is not "\n", and such lines stayed one.
            var lines = output.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            if lines.last?.isEmpty == true { lines.removeLast() }
            for line in lines.suffix(20) { text += "  │ \(Terminal.visible(String(decoding: line, as: UTF8.self)))\n" }
            if lines.count > 20 { text += "  (baton show \(run.id) --output prints all of it)\n" }
        }
        return text
    }

    /// What the run wrote, and what of it the history dropped past `output.keep`:
    /// `output: 38.1 MiB written, 16.0 MiB kept, 22.1 MiB dropped between the head and the tail`.
    static func outputTotals(_ totals: OutputTotals) -> String {
        guard totals.dropped > 0 else { return "output: \(Format.bytes(totals.written)) written, all kept" }
        return "output: \(Format.bytes(totals.written)) written, \(Format.bytes(totals.kept)) kept, "
            + "\(Format.bytes(totals.dropped)) dropped between the head and the tail (output.keep)"
    }

    /// A decision recorded against this run, with what it meant for the trigger.
    static func decided(_ decision: TriggerRecord.Decision) -> String {
        switch decision {
        case .joined: "joined (shared this run's outcome)"
        case .coalesced: "coalesced (shared this follow-up's outcome)"
        case .rejected: "rejected (busy: this run was in flight)"
        case .cooled: "cooled (answered with this success inside the cooldown; nothing ran)"
        case .slotRan: "scheduled slot already ran (answered with this run; nothing ran)"
        case .debounced: "debounced (joined this pending run and pushed its start back)"
        case let .denied(permission): "denied \(permission.rawValue)"
        case .paused: "paused (the action was paused; nothing ran)"
        case .skipped: "skipped (a scheduled slot while the action was paused)"
        case .rateLimited: "rate limited (a run would have started over the action's rateLimit; nothing ran)"
        case .deniedApproval: "denied approval (an approve or deny of this run by someone who may not; nothing was decided)"
        }
    }
}

/// `show --json`: the run's detail, and `artifacts` (as the `artifacts` op answers) where it kept any or said why not.
struct ShownJSON: Encodable {
    var detail: RunDetail
    var artifacts: ArtifactList?

    enum Key: String, CodingKey { case artifacts }

    func encode(to encoder: any Encoder) throws {
        try detail.encode(to: encoder)
        guard let artifacts else { return }
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(artifacts, forKey: .artifacts)
    }
}
