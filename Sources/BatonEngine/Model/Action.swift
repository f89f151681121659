/// A named definition of work: what to run, for how long, and what a second trigger does.
///
/// A value, held as one reference to its fields, shared until changed: a trigger, a run in flight,
/// a launch and the engine's effects each carry the action, and a copy is a retain where its 37
/// fields inline were a `memcpy` and the retains of its strings, arrays and maps (issue 39). The
/// fields are never written: a change makes a new storage (the config reader's, at load).
public struct Action: Sendable {
    @usableFromInline var storage: Storage

    /// The longest a pending run of this action waits after its burst's first trigger: `maxWait`,
    /// or ten windows; nil when the action does not debounce.
    public var debounceMaxWait: Duration? { debounce.map { maxWait ?? $0 * 10 } }

    /// 16 MiB: the `output.keep` of an action when neither it nor the config says.
    public static let defaultOutputKeep: Int64 = 16 << 20

    public init(
        name: String, exec: [String] = [], cwd: String? = nil, env: [String: String] = [:],
        timeout: Duration? = nil, killGrace: Duration = .seconds(5), policy: Policy = .reject,
        policies: Set<Policy> = [], retry: RetryPolicy = .none, params: [String: ParamSpec] = [:],
        keyParams: [String] = [], onInterrupt: InterruptPolicy = .fail, description: String? = nil
    ) {
        storage = Storage(Fields(
            name: name, exec: exec, cwd: cwd, env: env, timeout: timeout, killGrace: killGrace, policy: policy,
            policies: policies, retry: retry, params: params, keyParams: keyParams, onInterrupt: onInterrupt,
            description: description))
    }
}

extension Action: Equatable {
    public static func == (lhs: Action, rhs: Action) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }
}

// Reflected as its fields, as the struct that held them was: `dump` and a failed `#expect` show them.
extension Action: CustomReflectable {
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: storage.fields).children, displayStyle: .struct)
    }
}

/// What happens to the processes a run's leader leaves behind.
public enum Leftovers: String, Codable, Sendable {
    case kill
    case keep
}

/// What recovery does with a run left `loading` or `retrying` by a crash.
public enum InterruptPolicy: String, Codable, Sendable {
    /// End it as `failure` with reason `interrupted`.
    case fail
    /// Queue it again, to start from the beginning.
    case restart
}

/// How many more attempts a failed run gets, and how long to wait before each.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts after the first one; 0 means no retry.
    public var attempts: Int
    /// The wait before the first retry; each later one doubles it, up to `maxBackoff`.
    public var backoff: Duration
    /// The longest wait between attempts.
    public var maxBackoff: Duration

    public init(attempts: Int, backoff: Duration = .seconds(1), maxBackoff: Duration = .seconds(60)) {
        self.attempts = attempts
        self.backoff = backoff
        self.maxBackoff = maxBackoff
    }

    /// No retry: a failed attempt ends the run.
    public static let none = RetryPolicy(attempts: 0)

    /// The wait after failed attempt `attempt` (1-based): exponential, capped, with "equal jitter"
    /// (half fixed, half random) so that retries of many runs spread out. `unit` is in [0, 1).
    public func delay(afterAttempt attempt: Int, unit: Double) -> Duration {
        let base = backoff.secondsValue * Double(1 << min(max(attempt - 1, 0), 30))
        let capped = min(base, maxBackoff.secondsValue)
        let seconds = capped / 2 + capped / 2 * min(max(unit, 0), 1)
        return .microseconds(Int64(seconds * 1_000_000))
    }
}

/// One param an action accepts.
public struct ParamSpec: Sendable, Equatable {
    /// The pattern the whole value must match, compiled when the config was read.
    public var pattern: ParamPattern?
    /// The value when a trigger does not pass one; without a default the param is required.
    public var defaultValue: String?
    /// A secret (`secret: true`): its value reaches the process and nothing else; the run keeps
    /// `***` for it, and its key a keyed hash (`Action.seal`). A secret has no default.
    public var secret: Bool

    public init(pattern: ParamPattern? = nil, defaultValue: String? = nil, secret: Bool = false) {
        self.pattern = pattern
        self.defaultValue = defaultValue
        self.secret = secret
    }
}

/// A user (and group) an action's process runs as. The config names them; batond looks the
/// names up again at each start (`resolved()`), so a user deleted since the config was read is
/// an error naming them, never whoever was given their uid next (issue 21, item 11).
public struct RunAs: Sendable, Equatable {
    /// The user as the config names it: a name, or a uid (then the uid is what is meant).
    public var named: String
    /// The group as the config names it, or nil for the user's primary group.
    public var groupNamed: String?
    /// What the names meant when last looked up: at load, then at each start.
    public var user: String
    public var uid: UInt32
    public var gid: UInt32
    /// Supplementary groups: the user's, from the group database.
    public var groups: [UInt32]
    public var home: String
    public var shell: String

    public init(named: String, groupNamed: String? = nil, user: String, uid: UInt32, gid: UInt32, groups: [UInt32],
                home: String, shell: String) {
        self.named = named
        self.groupNamed = groupNamed
        self.user = user
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.home = home
        self.shell = shell
    }
}
