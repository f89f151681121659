/// An action a run needs (`needs: ["build-a"]`, or `needs: [{ action: "build-a", params: { ref:
/// "{ref}" } }]`), resolved at load: a run of the needing action first triggers it under `join`
/// with these params, waits for that run, and starts once every needed run succeeded.
public final class NeedTarget: Sendable, Equatable {
    public let action: Action
    /// Each param of the needed run: a literal, or holding `{name}` of the needing run's own params.
    public let params: [String: String]

    public init(action: Action, params: [String: String]) {
        self.action = action
        self.params = params
    }

    /// The needed run's params for a needing run's `params`: every `{name}` replaced by that
    /// param's value, then checked against the needed action (its defaults filled in).
    public func params(for needing: [String: String]) throws(BatonError) -> [String: String] {
        var given: [String: String] = [:]
        for (name, template) in params { given[name] = Self.fill(template, with: needing) }
        return try action.resolveParams(given)
    }

    /// `template` with each `{name}` replaced by `values[name]` (one not given stays as written).
    public static func fill(_ template: String, with values: [String: String]) -> String {
        guard template.contains("{") else { return template }
        var result = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            // An unmatched `{` and what follows it stay as written.
            guard let close = rest[open...].firstIndex(of: "}") else { return result + rest[open...] }
            let name = String(rest[rest.index(after: open)..<close])
            result += values[name] ?? String(rest[open...close])
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }

    /// The names a template refers to (`{name}`), in order.
    public static func references(in template: String) -> [String] {
        var names: [String] = []
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            names.append(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return names
    }

    public static func == (lhs: NeedTarget, rhs: NeedTarget) -> Bool {
        lhs === rhs || (lhs.action == rhs.action && lhs.params == rhs.params)
    }
}

/// One run another run needs, as known when told: its action, its id, and its phase (with the
/// reason of its end, where it ended).
public struct NeededRun: Codable, Sendable, Equatable {
    public var action: String
    public var run: Int64
    public var phase: Phase
    public var reason: String?

    public init(action: String, run: Int64, phase: Phase, reason: String? = nil) {
        self.action = action
        self.run = run
        self.phase = phase
        self.reason = reason
    }

    /// Whether a batond's shutdown stopped it (`cancelled`, `shutdown`): the run that needs it
    /// asks that need again (`NeedBook.Outcome.askAgain`).
    public var stoppedByShutdown: Bool { phase == .cancelled && reason == "shutdown" }

    /// Why a run that needs this one cannot start, once it ended other than `success`: "needs
    /// build-a: run 41 failed" (cancelled, interrupted, timed out: said so). Nil otherwise.
    public var failure: String? {
        let how: String
        switch phase {
        case .success, .queued, .loading, .retrying: return nil
        case .failure:
            switch reason {
            case "interrupted": how = "was interrupted"
            case "timeout": how = "timed out"
            default: how = "failed"
            }
        case .cancelled:
            switch reason {
            case "replaced": how = "was replaced"
            case "unwritten": how = "could not be written (the history refused its creation)"
            case "shutdown": how = "was stopped by batond's shutdown"
            case "pruned": how = "is gone from the history (retention removed it)"
            default: how = "was cancelled"
            }
        }
        return "needs \(action): run \(run) \(how)"
    }

    /// "build-a run 41", as `status` lists what a run waits for.
    public var text: String { "\(action) run \(run)" }
}
