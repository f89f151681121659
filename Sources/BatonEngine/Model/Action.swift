/// A named definition of work: what to run, for how long, and what a second trigger does.
public struct Action: Sendable, Equatable {
    /// The action's name, unique in the config.
    public var name: String
    /// The argv to run, without a shell; empty for an in-process action.
    public var exec: [String]
    /// The working directory of the process; the daemon's when nil.
    public var cwd: String?
    /// Extra environment variables of the process.
    public var env: [String: String]
    /// How long a run may take, from its first `loading` to its end, retries and backoffs included.
    public var timeout: Duration?
    /// How long a process tree has between SIGTERM and SIGKILL.
    public var killGrace: Duration
    /// What happens to processes of a run's tree still alive when its leader exits: stopped
    /// (SIGTERM, SIGKILL after `killGrace`) before the run's end is recorded, or kept running
    /// (`leftovers: "keep"`), which breaks single flight: the next run may overlap them.
    public var leftovers: Leftovers = .kill
    /// What a trigger does when the key already has a run in flight.
    public var policy: Policy
    /// The policies a trigger may ask for instead of `policy`.
    public var policies: Set<Policy>
    /// How often and how soon a failed run is tried again.
    public var retry: RetryPolicy
    /// The params a trigger may pass, by name.
    public var params: [String: ParamSpec]
    /// The params whose values are part of the single-flight key, in key order.
    public var keyParams: [String]
    /// What recovery does with a run that a crash of the daemon interrupted.
    public var onInterrupt: InterruptPolicy
    /// A sentence saying what the action does, for `baton actions`.
    public var description: String?
    /// This action's own retention settings, over the global ones.
    public var retention: Retention.Override?
    /// Who may trigger, cancel and read this action, over the global rules.
    public var allow: AccessPolicy.Override?
    /// The identity the process runs as (batond must run as root); batond's own when nil.
    public var runAs: RunAs?
    /// The file mode creation mask of the process; batond's (0027) when nil.
    public var umask: UInt32?
    /// What the kernel holds each attempt to, in the attempt's cgroup (`limits`).
    public var limits = ResourceLimits()
    /// After a success of a key, triggers of that key within this window run nothing and are
    /// answered with that success (`cooldown`); nil for none.
    public var cooldown: Duration?
    /// A trigger creates or joins the key's pending run, which starts once no trigger of the key
    /// has come for this window (`debounce`); nil for none.
    public var debounce: Duration?
    /// The longest a pending run waits after the first trigger of its burst (`maxWait`); nil for
    /// ten windows (`debounceMaxWait`).
    public var maxWait: Duration?
    /// How many follow-ups a key's line holds under `queue` (`queue: { depth: N }`): 1, the
    /// default, keeps one that every later trigger joins; more wait first in first out, each with
    /// its own params, and a trigger beyond them is refused `busy`.
    public var queueDepth = 1
    /// After this many failures in a row the action pauses itself (`pauseAfterFailures`), until
    /// `baton resume`; nil for never.
    public var pauseAfterFailures: Int?
    /// At most so many runs start per window, per key or per action (`rateLimit`); nil for no limit.
    public var rateLimit: RateLimit?
    /// Whether a trigger may pass `force` to run inside the cooldown window (`force: true`).
    public var allowsForce = false
    /// The locks its runs take, all at once, before they start (`locks`), each with its limit
    /// (the config's `limits`); a run whose locks are not all free waits `queued`. Empty for none.
    public var locks: [LockClaim] = []
    /// When systemd's timers trigger the action, as `OnCalendar=` expressions (`schedule`), each
    /// checked by `systemd-analyze calendar` at load; empty for none.
    public var schedules: [String] = []
    /// The most a scheduled firing is delayed at random (`scheduleJitter`, `RandomizedDelaySec=`).
    public var scheduleJitter: Duration?
    /// Whether a firing missed while the machine was off runs at boot (`catchUp`, `Persistent=`).
    public var catchUp = false
    /// How many bytes of each run's output the history keeps (`output.keep`): the first and the
    /// last half of it once a run writes more; 0 keeps none.
    public var outputKeep: Int64 = Action.defaultOutputKeep
    /// The most bytes of files a run may leave in `$BATON_ARTIFACTS` to have them kept with it
    /// (`artifacts: { keep: "100MiB" }`); nil: the action keeps no artifacts (no directory is made).
    public var artifactsKeep: Int64?
    /// Whether the process's stdout and stderr are a pseudo-terminal (`tty: true`), so that
    /// programs line-buffer and colour as on a terminal; its output is then one stream, stdout.
    public var tty = false
    /// Whether a run's process outlives batond (`survivesRestart`, true unless the config says
    /// false): it runs under `baton-shim`, which a crash or restart of batond leaves running, and
    /// the next batond adopts the run. False: recovery kills it and shutdown cancels it, as before.
    public var survivesRestart = true
    /// The actions a run's end triggers (`on: { failure, success, change }`), resolved at load.
    public var hooks = HookTargets()
    /// The actions a run first triggers (under `join`) and waits for (`needs`), resolved at load;
    /// it starts once each of their runs succeeded, and fails without starting when one did not.
    public var needs: [NeedTarget] = []
    /// Who must approve each run before it starts (`approve`); nil: runs start without one.
    public var approve: ApprovalRule?

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
        self.name = name
        self.exec = exec
        self.cwd = cwd
        self.env = env
        self.timeout = timeout
        self.killGrace = killGrace
        self.policy = policy
        self.policies = policies
        self.retry = retry
        self.params = params
        self.keyParams = keyParams
        self.onInterrupt = onInterrupt
        self.description = description
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
