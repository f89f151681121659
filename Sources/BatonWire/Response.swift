import BatonEngine
/// One response line: the final answer to a request (`ok` set), or an `event` before it.
public struct Response: Codable, Sendable {
    public var id: RequestID?
    /// Set on the final answer: true, or false with `error`.
    public var ok: Bool?
    /// Set on intermediate lines of `trigger`, `wait` and `watch`: "update".
    public var event: String?
    @Boxed public var error: WireError? = nil
    /// trigger, wait, cancel (single run), update events: the run (one reference already: not boxed).
    public var run: RunSnapshot?
    /// update events: the transition just committed (absent for progress).
    @Boxed public var transition: Transition? = nil
    /// trigger: what the trigger did.
    public var decision: TriggerDecision?
    /// trigger: whether the caller shares a run another trigger created.
    public var shared: Bool?
    /// trigger, when `cooled`: the action's cooldown, in microseconds (the run is its last success).
    public var cooldown: Int64?
    /// trigger, when `replaced`: the runs in flight that the new run replaces (they end cancelled).
    public var replaced: [Int64]?
    /// history, status, cancel: runs.
    public var runs: [RunSnapshot]?
    /// show: the whole story.
    @Boxed public var detail: RunDetail? = nil
    /// status, actions: one entry per action.
    public var actions: [ActionInfo]?
    /// denied: refused requests, newest first.
    public var triggers: [TriggerRecord]?
    /// stats: one entry per action.
    public var stats: [ActionStats]?
    /// search: the runs found, newest first, each with its matching lines.
    public var matches: [SearchMatch]?
    /// events: the actions' pauses and resumes, newest first.
    public var events: [ActionEvent]?
    /// search: where it stopped, when it read its most bytes of output before the end (`SearchCut`).
    public var searchCut: SearchCut?
    /// prune: runs removed (or that would be) per action.
    @Boxed public var prune: PruneReport? = nil
    /// status: why the history cannot be written right now (new triggers are refused meanwhile).
    public var storeProblem: String?
    /// How batond keeps track of each run's processes (status): a cgroup per attempt, or its process group and tag.
    public var processTree: String?
    /// metrics: Prometheus' text exposition format, as `GET /metrics` serves it.
    public var metrics: String?
    /// output events: one chunk of the run's output.
    @Boxed public var chunk: OutputChunk? = nil
    /// output: where the output sent ends (the next `from`), and how many bytes the history dropped.
    public var outputEnd: Int64?
    public var outputDropped: Int64?
    /// reload: what batond warns of in the config it applied (a setting that changes only at
    /// restart, a deprecated field), each a sentence; absent when there is nothing to say.
    public var warnings: [String]?
    /// ping: the daemon's version and pid.
    public var version: String?
    /// pause: the pause made; resume: the pause it ended (absent: the action was not paused).
    public var pause: ActionPause?
    public var pid: Int32?
    /// batond restarts in place: the last line of the connection, with no id. Every request it
    /// took on the connection is answered before it (or, followed, as far as it got); a request
    /// with no line before it was not taken, and may be sent again (docs/protocol.md).
    public var restarting: Bool?
    /// watch with `after`, its `watching` event: how many transitions committed after the cursor
    /// were left out (the oldest; past `Replay.bound`), absent when none were.
    public var skipped: Int64?
    /// artifacts: the run's kept files and the notices about them.
    @Boxed public var artifacts: ArtifactList? = nil
    /// artifact: one piece of a file's bytes.
    @Boxed public var piece: ArtifactPiece? = nil

    public init(id: RequestID?, ok: Bool? = true) {
        self.id = id
        self.ok = ok
    }

    /// A failed answer.
    public static func failure(_ id: RequestID?, _ error: WireError) -> Response {
        var response = Response(id: id, ok: false)
        response.error = error
        return response
    }

    /// An intermediate update of a run.
    public static func update(_ id: RequestID?, _ update: RunUpdate) -> Response {
        var response = Response(id: id, ok: nil)
        response.event = "update"
        response.run = update.run
        response.transition = update.transition
        return response
    }
}


/// An error on the wire: a stable code and a sentence.
public struct WireError: Codable, Sendable, Error, Equatable {
    public var code: ErrorCode
    public var message: String
    /// busy: the run in flight.
    public var run: Int64?
    /// busy (reject): when the run in flight entered its phase, µs since the epoch.
    public var since: Int64?
    /// busy (queue): the key's line is full, this many runs wait in it.
    public var line: Int?
    /// bad_request about one param (undeclared, missing, not matching its pattern): its name.
    public var param: String?
    /// rate_limited: when the next run of the action may start, µs since the epoch.
    public var next: Int64?

    public init(code: ErrorCode, message: String, run: Int64? = nil, since: Int64? = nil, param: String? = nil) {
        self.code = code
        self.message = message
        self.run = run
        self.since = since
        self.param = param
    }

    /// The one place a `BatonError` becomes a code and a sentence, as of `now` (a sentence may say
    /// how long ago something was; BatonCore's `init(_:)` reads the clock).
    public init(_ error: BatonError, at now: Timestamp) {
        self.init(code: error.code, message: error.message(at: now))
        if case let .busy(run, _, _, since, line) = error { self.run = run; self.since = since.rawValue; self.line = line }
        if case let .badParam(name, _) = error { param = name }
        if case let .rateLimited(_, _, next) = error { self.next = next.rawValue }
        if case let .definitionMismatch(run, _, _) = error { self.run = run }
        if case let .delivered(run, _, _) = error { self.run = run }
    }

    /// An unknown code from a newer daemon reads as `internal`, so an old client still shows the message.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = ErrorCode(rawValue: try container.decode(String.self, forKey: .code)) ?? .internal
        message = try container.decode(String.self, forKey: .message)
        run = try container.decodeIfPresent(Int64.self, forKey: .run)
        since = try container.decodeIfPresent(Int64.self, forKey: .since)
        param = try container.decodeIfPresent(String.self, forKey: .param)
        line = try container.decodeIfPresent(Int.self, forKey: .line)
        next = try container.decodeIfPresent(Int64.self, forKey: .next)
    }
}

/// An action as `actions` and `status` describe it.
public struct ActionInfo: Codable, Sendable, Equatable {
    public var name: String
    public var description: String?
    public var exec: [String]
    public var policy: Policy
    public var policies: [Policy]
    public var timeout: Int64?
    public var params: [String: ParamInfo]
    public var keyParams: [String]
    /// status: the runs in flight, oldest first.
    public var inFlight: [RunSnapshot]?
    /// status: the last run that ended.
    public var last: RunSnapshot?
    /// status: true for an action a reload removed whose runs are still in flight.
    public var removed: Bool?
    /// status and actions: what the asking peer may do with this action (read, trigger, cancel),
    /// so that a client can offer only what batond would allow.
    public var allowed: [Permission]?
    /// actions and status: the action's schedules (`OnCalendar=` expressions), when it has any.
    public var schedules: [String]?
    /// actions and status: the most a scheduled firing is delayed at random, in microseconds.
    public var scheduleJitter: Int64?
    /// actions and status: true where a firing missed while the machine was off runs at boot (`catchUp`).
    public var catchUp: Bool?
    /// status: the action's pause, while it holds: who, why, since and until when.
    public var paused: ActionPause?
    /// actions and status: how many follow-ups a key's line holds (`queue: { depth: N }`), when more than one.
    public var queueDepth: Int?
    /// actions and status: the locks its runs take to start, each with its limit, when it has any.
    public var locks: [LockClaim]?
    /// actions and status: the action's cooldown window, in microseconds, when it has one.
    public var cooldown: Int64?
    /// actions and status: true where a trigger may pass `force` to run inside the cooldown.
    public var force: Bool?
    /// actions and status: the actions its runs' outcomes trigger (`on:`), when it has hooks.
    public var hooks: HookNames?
    /// status, for an action with a cooldown: the last success of each key whose window is still
    /// open (a trigger of that key runs nothing until `endedAt` + `cooldown`), oldest first.
    public var cooling: [RunSnapshot]?
    /// actions and status: the action's rate limit, when it has one; in status, with what is left of it.
    public var rateLimit: RateInfo?
    /// actions and status: the actions each run first triggers and waits for (`needs`), when it has any.
    public var needs: [String]?

    public init(name: String, description: String?, exec: [String], policy: Policy, policies: [Policy], timeout: Int64?,
                params: [String: ParamInfo], keyParams: [String], inFlight: [RunSnapshot]? = nil, last: RunSnapshot? = nil) {
        self.name = name
        self.description = description
        self.exec = exec
        self.policy = policy
        self.policies = policies
        self.timeout = timeout
        self.params = params
        self.keyParams = keyParams
        self.inFlight = inFlight
        self.last = last
    }

    public init(_ action: Action) {
        self.init(name: action.name, description: action.description, exec: action.exec, policy: action.policy,
                  policies: action.policies.sorted { $0.rawValue < $1.rawValue }, timeout: action.timeout?.microseconds,
                  params: action.params.mapValues { ParamInfo(pattern: $0.pattern?.source, default: $0.defaultValue, secret: $0.secret ? true : nil) },
                  keyParams: action.keyParams)
        schedules = action.schedules.isEmpty ? nil : action.schedules
        scheduleJitter = action.scheduleJitter?.microseconds
        catchUp = action.catchUp && !action.schedules.isEmpty ? true : nil
        queueDepth = action.queueDepth > 1 ? action.queueDepth : nil
        locks = action.locks.isEmpty ? nil : action.locks
        cooldown = action.cooldown?.microseconds
        force = action.allowsForce ? true : nil
        hooks = action.hooks.isEmpty ? nil : HookNames(action.hooks)
        rateLimit = action.rateLimit.map { RateInfo($0) }
        needs = action.needs.isEmpty ? nil : action.needs.map(\.action.name)
    }
}

/// An action's hooks as `actions` and `status` describe them: the action each outcome triggers.
public struct HookNames: Codable, Sendable, Equatable {
    public var failure: String?
    public var success: String?
    public var change: String?
    /// true where the hooks fire for the action's own hook runs too (`on.chain`).
    public var chain: Bool?

    public init(failure: String? = nil, success: String? = nil, change: String? = nil, chain: Bool? = nil) {
        self.failure = failure
        self.success = success
        self.change = change
        self.chain = chain
    }

    public init(_ hooks: HookTargets) {
        self.init(failure: hooks.targets[.failure]?.action.name, success: hooks.targets[.success]?.action.name,
                  change: hooks.targets[.change]?.action.name, chain: hooks.chain ? true : nil)
    }

    /// Each hook in `failure`, `success`, `change` order, with the action it triggers.
    public var named: [(event: HookEvent, action: String)] {
        [(HookEvent.failure, failure), (.success, success), (.change, change)].compactMap { event, action in action.map { (event, $0) } }
    }
}

/// A param as `actions` describes it.
public struct ParamInfo: Codable, Sendable, Equatable {
    public var pattern: String?
    public var `default`: String?
    /// true for a secret param (`secret: true`): its value is shown back as `***`; absent otherwise.
    public var secret: Bool?

    public init(pattern: String?, default: String?, secret: Bool? = nil) {
        self.pattern = pattern
        self.default = `default`
        self.secret = secret
    }
}

/// What a trigger did, as the wire names it.
public enum TriggerDecision: String, Codable, Sendable, CaseIterable {
    case created, followUp, joined, coalesced, rejected, replaced, cooled, slotRan

    public init(_ decision: FlightTable.Decision) {
        switch decision {
        case .created: self = .created
        case .followUp: self = .followUp
        case .joined: self = .joined
        case .coalesced: self = .coalesced
        case .rejected: self = .rejected
        case .replaced: self = .replaced
        case .cooled: self = .cooled
        case .slotRan: self = .slotRan
        }
    }
}
