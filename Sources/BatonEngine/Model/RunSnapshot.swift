/// A run as callers see it: its identity, phase and outcome so far.
public struct RunSnapshot: Codable, Sendable, Equatable {
    public var id: Int64
    public var action: String
    public var key: String
    public var phase: Phase
    public var policy: Policy
    public var params: [String: String]
    public var trigger: Peer?
    public var queuedAt: Timestamp
    public var startedAt: Timestamp?
    public var endedAt: Timestamp?
    public var attempts: Int
    public var exitCode: Int32?
    public var signal: Int32?
    public var reason: String?
    public var error: String?
    /// The uid that cancelled the run, when one did.
    public var cancelledBy: UInt32?
    /// The latest progress the action reported.
    public var progress: Progress?
    /// The median duration of the action's recent successful runs when this run was created, in
    /// microseconds: the basis of an estimated progress. Live runs only; not stored.
    public var estimate: Int64?
    /// The host that runs it, in a fleet (nil on a single machine).
    public var host: String?
    /// The seq of the run's latest transition, where the answer knows it (live runs and updates):
    /// lets a client that merges a snapshot with a stream of updates drop updates it already has.
    public var seq: Int?
    /// The CPU time of the run's processes, user and system, in microseconds: summed over its
    /// attempts; nil where none was measured.
    public var cpuUser: Int64?
    public var cpuSystem: Int64?
    /// The largest peak memory of any of its attempts, in bytes; nil where none was measured.
    public var memoryPeak: Int64?
    /// Where the trigger that created the run came from, when not the socket ("webhook deploy from
    /// 203.0.113.7, delivery 72d3…"): the `via` of its `queued` transition; nil for a socket trigger.
    public var via: String?
    /// The schedule slot the run was made for (`baton run --scheduled`): one run per action and
    /// slot; nil for a trigger that is not scheduled.
    public var slot: Timestamp?
    /// The hook whose trigger made this run ("failure hook of deploy run 7"); nil for any other run.
    public var hook: HookCause?
    /// What a queued run waits for when a lock it claims is not free ("waiting for lock db, held by
    /// migrate run 12"). Live runs only; not stored.
    public var waiting: LockWait?
    /// When a debounced run's window ends ("debouncing, starts in 3.2s"), while it is open: a
    /// further trigger of the key pushes it back. Live runs only; not stored.
    public var debounceUntil: Timestamp?
    /// When a run held back by its action's rate limit (`over: delay`) may start ("rate limited,
    /// starts in 12m"). Live runs only; not stored.
    public var rateUntil: Timestamp?
    /// When a key's cooldown after this success closes, by the wall clock now (measured on the
    /// boot's clock, so a stepped wall clock does not move it). Status only; not stored.
    public var coolsUntil: Timestamp?
    /// A follow-up's place in its key's line (`queue`): 1 starts next, when the run holding the
    /// key ends. Live runs only; not stored.
    public var line: Int?
    /// The runs it needs (`needs`), each with its phase as last known: live, what a queued run
    /// waits for ("waiting for build-a run 41, build-b run 42"); `show`, from the history.
    public var needs: [NeededRun]?
    /// The runs that need it (`show` only, from the history).
    public var neededBy: [NeededRun]?
    /// Its approval (`approve`): what a queued run waits for ("waiting for approval by group:ops
    /// (until 14:05)"), then how it was decided. Nil for a run of an action without `approve`.
    public var approval: ApprovalState?

    public init(
        id: Int64, action: String, key: String, phase: Phase, policy: Policy, params: [String: String],
        trigger: Peer?, queuedAt: Timestamp, startedAt: Timestamp? = nil, endedAt: Timestamp? = nil,
        attempts: Int = 0, exitCode: Int32? = nil, signal: Int32? = nil, reason: String? = nil,
        error: String? = nil, progress: Progress? = nil, estimate: Int64? = nil
    ) {
        self.id = id
        self.action = action
        self.key = key
        self.phase = phase
        self.policy = policy
        self.params = params
        self.trigger = trigger
        self.queuedAt = queuedAt
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.attempts = attempts
        self.exitCode = exitCode
        self.signal = signal
        self.reason = reason
        self.error = error
        self.progress = progress
        self.estimate = estimate
    }

    /// The run with a transition applied: phase, timestamps and outcome fields.
    public func applying(_ transition: Transition) -> RunSnapshot {
        var run = self
        run.phase = transition.to
        run.seq = transition.seq
        let detail = transition.detail
        switch transition.to {
        case .queued:
            break
        case .loading:
            if run.startedAt == nil { run.startedAt = transition.at }
            run.attempts = detail.attempt ?? run.attempts + 1
        case .retrying:
            run.exitCode = detail.exitCode
            run.signal = detail.signal
            run.error = detail.error
            run.account(detail)
        case .success, .failure, .cancelled:
            run.account(detail)
            run.endedAt = transition.at
            run.exitCode = detail.exitCode ?? run.exitCode
            run.signal = detail.signal ?? run.signal
            run.reason = detail.reason
            // The end's own error: a run cancelled while it waited to retry is not its last attempt's failure.
            run.error = transition.to == .success ? nil : detail.error
            run.cancelledBy = transition.to == .cancelled ? detail.by : nil
            run.progress = nil
        }
        return run
    }

    /// Adds an attempt's figures (from the detail of the transition that ended it) to the run's:
    /// CPU times add up, the memory peak is the larger. The store's row follows the same rule.
    public mutating func account(_ detail: TransitionDetail) {
        if let user = detail.cpuUser { cpuUser = (cpuUser ?? 0) + user }
        if let system = detail.cpuSystem { cpuSystem = (cpuSystem ?? 0) + system }
        if let peak = detail.memoryPeak { memoryPeak = Swift.max(memoryPeak ?? peak, peak) }
    }
}

/// How far along a run is, as the action reports it on `BATON_PROGRESS_FD`.
public struct Progress: Codable, Sendable, Equatable {
    /// Done so far, from 0 to 1, when known.
    public var fraction: Double?
    /// Steps done and total, when reported as `3/10`.
    public var completed: Int?
    public var total: Int?
    /// What the action says it is doing.
    public var message: String?

    public init(fraction: Double? = nil, completed: Int? = nil, total: Int? = nil, message: String? = nil) {
        self.fraction = fraction
        self.completed = completed
        self.total = total
        self.message = message
    }

    /// The most characters of a message kept: a longer one is cut there.
    public static let messageLimit = 200

    /// Parses one progress line: `3/10`, `0.42`, `42%`, each optionally followed by a message.
    /// A line that is none of these is taken as a message alone. Nil for a blank line.
    public init?(line: String) {
        let text = line.trimmingWhitespace()
        guard !text.isEmpty else { return nil }
        let head = text.prefix { $0 != " " && $0 != "\t" }
        let message = text.dropFirst(head.count).trimmingWhitespace()
        let tail = message.isEmpty ? nil : String(message.prefix(Self.messageLimit))
        if head.hasSuffix("%"), let percent = Double(head.dropLast()), percent.isFinite {
            self.init(fraction: min(max(percent / 100, 0), 1), message: tail)
        } else if let slash = head.firstIndex(of: "/"),
                  let done = Int(head[..<slash]), let total = Int(head[head.index(after: slash)...]),
                  total > 0, done >= 0 {
            self.init(fraction: min(Double(done) / Double(total), 1), completed: done, total: total, message: tail)
        } else if let value = Double(head), value.isFinite, value >= 0, value <= 1 {
            self.init(fraction: value, message: tail)
        } else {
            self.init(message: String(text.prefix(Self.messageLimit)))
        }
    }
}
