import BatonEngine

/// The id a request carries and its responses echo: a number or a string.
public enum RequestID: Codable, Sendable, Hashable {
    case number(Int64)
    case text(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(Int64.self) { self = .number(number); return }
        if let text = try? container.decode(String.self) { self = .text(text); return }
        throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a string or an integer, got \(container.describedValue)")
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case let .number(number): try container.encode(number)
        case let .text(text): try container.encode(text)
        }
    }
}

/// What a request asks for.
public enum Operation: String, Codable, Sendable, CaseIterable {
    case ping, trigger, status, history, show, actions, cancel, wait, watch, reload, prune, stats, denied, metrics, output, search, pause, resume, events, artifacts, artifact, restart, approve, deny, approvals
}

/// One request line. Which fields matter depends on `op`; see docs/protocol.md.
public struct Request: Codable, Sendable, Equatable {
    public var id: RequestID?
    public var op: Operation
    /// trigger, cancel, watch: the action.
    public var action: String?
    /// trigger: the params.
    public var params: [String: String]?
    /// trigger: a policy other than the action's own.
    public var policy: Policy?
    /// trigger: answer once the run is queued instead of at its end.
    public var detach: Bool?
    /// trigger: run even inside the action's cooldown window, where the action allows `force`.
    public var force: Bool?
    /// trigger: the schedule slot fired (`--scheduled`), in microseconds since 1970: triggers of one
    /// action and slot make at most one run.
    public var slot: Int64?
    /// prune: count what retention would remove, without removing it.
    public var dryRun: Bool?
    /// show, cancel, wait, approve, deny: the run.
    public var run: Int64?
    /// cancel: only the runs of this key.
    public var key: String?
    /// history: which runs.
    @Boxed public var filter: HistoryFilter? = nil
    /// watch: the last transition the client saw: the transitions committed after it are sent
    /// first (a watch again after a restart or a stop of batond misses nothing).
    public var after: WatchCursor?
    /// watch: also an `update` without a transition each time a run in flight reports progress.
    public var progress: Bool?
    /// output: the position in the run's output to start from (0 when absent).
    public var from: Int64?
    /// output: follow the run's output live until it ends.
    public var follow: Bool?
    /// search: the text to find in the runs' kept output and their param values.
    public var text: String?
    /// pause: why (required); deny: why (optional).
    public var reason: String?
    /// pause: how long, in microseconds (absent: until `resume`).
    public var duration: Int64?
    /// pause: queue the action's triggers while it lasts instead of refusing them (`--hold`).
    public var hold: Bool?
    /// artifact: the file's name (its path under the run's `$BATON_ARTIFACTS`).
    public var name: String?
    /// Any op, as `"as"`: serve it as this user of the machine would be served (their uid, gid
    /// and groups for every access check). Honoured only from root or batond's own user: the
    /// team's dashboard asks on behalf of the user a trusted proxy named.
    public var actingAs: String?
    /// With `as`, as `"asGroup"`: serve the request as a member of this local group and of no other,
    /// with no user's own rights; `as` is then the person's name for the history (an e-mail address,
    /// a provider's name), not an account. Honoured, like `as`, only from root or batond's own user.
    public var asGroup: String?

    enum CodingKeys: String, CodingKey {
        case id, op, action, params, policy, detach, force, slot, dryRun, run, key, filter, progress, from, follow, text, reason, duration, hold, name, after
        case actingAs = "as"
        case asGroup
    }

    public init(id: RequestID? = nil, op: Operation, action: String? = nil, params: [String: String]? = nil,
                policy: Policy? = nil, detach: Bool? = nil, run: Int64? = nil, key: String? = nil, filter: HistoryFilter? = nil,
                dryRun: Bool? = nil, progress: Bool? = nil, force: Bool? = nil, from: Int64? = nil, follow: Bool? = nil,
                slot: Int64? = nil, text: String? = nil, reason: String? = nil, duration: Int64? = nil, name: String? = nil,
                actingAs: String? = nil, hold: Bool? = nil, asGroup: String? = nil, after: WatchCursor? = nil) {
        self.after = after
        self.hold = hold
        self.actingAs = actingAs
        self.asGroup = asGroup
        self.name = name
        self.text = text
        self.reason = reason
        self.duration = duration
        self.slot = slot
        self.force = force
        self.id = id
        self.op = op
        self.action = action
        self.params = params
        self.policy = policy
        self.detach = detach
        self.run = run
        self.key = key
        self.filter = filter
        self.dryRun = dryRun
        self.progress = progress
        self.from = from
        self.follow = follow
    }
}

extension Request {
    /// Every field is optional but `op`; `run` says what came when it is not a whole number.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try container.decodeIfPresent(RequestID.self, forKey: .id),
                  op: try container.decode(Operation.self, forKey: .op),
                  action: try container.decodeIfPresent(String.self, forKey: .action),
                  params: try container.decodeIfPresent([String: String].self, forKey: .params),
                  policy: try container.decodeIfPresent(Policy.self, forKey: .policy),
                  detach: try container.decodeIfPresent(Bool.self, forKey: .detach),
                  run: try container.decodeWholeNumberIfPresent(Int64.self, forKey: .run, expected: "a whole number"),
                  key: try container.decodeIfPresent(String.self, forKey: .key),
                  filter: try container.decodeIfPresent(HistoryFilter.self, forKey: .filter),
                  dryRun: try container.decodeIfPresent(Bool.self, forKey: .dryRun),
                  progress: try container.decodeIfPresent(Bool.self, forKey: .progress),
                  force: try container.decodeIfPresent(Bool.self, forKey: .force),
                  from: try container.decodeWholeNumberIfPresent(Int64.self, forKey: .from, expected: "a whole number"),
                  follow: try container.decodeIfPresent(Bool.self, forKey: .follow),
                  slot: try container.decodeWholeNumberIfPresent(Int64.self, forKey: .slot, expected: "a whole number (microseconds since 1970)"),
                  text: try container.decodeIfPresent(String.self, forKey: .text),
                  reason: try container.decodeIfPresent(String.self, forKey: .reason),
                  duration: try container.decodeWholeNumberIfPresent(Int64.self, forKey: .duration, expected: "a whole number of microseconds"),
                  name: try container.decodeIfPresent(String.self, forKey: .name),
                  actingAs: try container.decodeIfPresent(String.self, forKey: .actingAs),
                  hold: try container.decodeIfPresent(Bool.self, forKey: .hold),
                  asGroup: try container.decodeIfPresent(String.self, forKey: .asGroup),
                  after: try container.decodeIfPresent(WatchCursor.self, forKey: .after))
    }
}
