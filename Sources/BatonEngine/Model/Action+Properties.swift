extension Action {
    // Each `_modify` writes the new storage back in a `defer`, so an inout access that throws keeps
    // what it changed before the throw, as a stored property did.
    /// The action's name, unique in the config.
    @inlinable public var name: String {
        get { storage.fields.name }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.name }
    }
    /// The argv to run, without a shell; empty for an in-process action.
    @inlinable public var exec: [String] {
        get { storage.fields.exec }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.exec }
    }
    /// The working directory of the process; the daemon's when nil.
    @inlinable public var cwd: String? {
        get { storage.fields.cwd }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.cwd }
    }
    /// Extra environment variables of the process.
    @inlinable public var env: [String: String] {
        get { storage.fields.env }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.env }
    }
    /// How long a run may take, from its first `loading` to its end, retries and backoffs included.
    @inlinable public var timeout: Duration? {
        get { storage.fields.timeout }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.timeout }
    }
    /// How long a process tree has between SIGTERM and SIGKILL.
    @inlinable public var killGrace: Duration {
        get { storage.fields.killGrace }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.killGrace }
    }
    /// What happens to processes of a run's tree still alive when its leader exits: stopped
    /// (SIGTERM, SIGKILL after `killGrace`) before the run's end is recorded, or kept running
    /// (`leftovers: "keep"`), which breaks single flight: the next run may overlap them.
    @inlinable public var leftovers: Leftovers {
        get { storage.fields.leftovers }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.leftovers }
    }
    /// What a trigger does when the key already has a run in flight.
    @inlinable public var policy: Policy {
        get { storage.fields.policy }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.policy }
    }
    /// The policies a trigger may ask for instead of `policy`.
    @inlinable public var policies: Set<Policy> {
        get { storage.fields.policies }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.policies }
    }
    /// How often and how soon a failed run is tried again.
    @inlinable public var retry: RetryPolicy {
        get { storage.fields.retry }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.retry }
    }
    /// The params a trigger may pass, by name.
    @inlinable public var params: [String: ParamSpec] {
        get { storage.fields.params }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.params }
    }
    /// The params whose values are part of the single-flight key, in key order.
    @inlinable public var keyParams: [String] {
        get { storage.fields.keyParams }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.keyParams }
    }
    /// What recovery does with a run that a crash of the daemon interrupted.
    @inlinable public var onInterrupt: InterruptPolicy {
        get { storage.fields.onInterrupt }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.onInterrupt }
    }
    /// A sentence saying what the action does, for `baton actions`.
    @inlinable public var description: String? {
        get { storage.fields.description }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.description }
    }
    /// This action's own retention settings, over the global ones.
    @inlinable public var retention: Retention.Override? {
        get { storage.fields.retention }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.retention }
    }
    /// Who may trigger, cancel and read this action, over the global rules.
    @inlinable public var allow: AccessPolicy.Override? {
        get { storage.fields.allow }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.allow }
    }
    /// The identity the process runs as (batond must run as root); batond's own when nil.
    @inlinable public var runAs: RunAs? {
        get { storage.fields.runAs }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.runAs }
    }
    /// The file mode creation mask of the process; batond's (0027) when nil.
    @inlinable public var umask: UInt32? {
        get { storage.fields.umask }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.umask }
    }
    /// What the kernel holds each attempt to, in the attempt's cgroup (`limits`).
    @inlinable public var limits: ResourceLimits {
        get { storage.fields.limits }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.limits }
    }
    /// After a success of a key, triggers of that key within this window run nothing and are
    /// answered with that success (`cooldown`); nil for none.
    @inlinable public var cooldown: Duration? {
        get { storage.fields.cooldown }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.cooldown }
    }
    /// A trigger creates or joins the key's pending run, which starts once no trigger of the key
    /// has come for this window (`debounce`); nil for none.
    @inlinable public var debounce: Duration? {
        get { storage.fields.debounce }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.debounce }
    }
    /// The longest a pending run waits after the first trigger of its burst (`maxWait`); nil for
    /// ten windows (`debounceMaxWait`).
    @inlinable public var maxWait: Duration? {
        get { storage.fields.maxWait }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.maxWait }
    }
    /// How many follow-ups a key's line holds under `queue` (`queue: { depth: N }`): 1, the
    /// default, keeps one that every later trigger joins; more wait first in first out, each with
    /// its own params, and a trigger beyond them is refused `busy`.
    @inlinable public var queueDepth: Int {
        get { storage.fields.queueDepth }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.queueDepth }
    }
    /// After this many failures in a row the action pauses itself (`pauseAfterFailures`), until
    /// `baton resume`; nil for never.
    @inlinable public var pauseAfterFailures: Int? {
        get { storage.fields.pauseAfterFailures }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.pauseAfterFailures }
    }
    /// At most so many runs start per window, per key or per action (`rateLimit`); nil for no limit.
    @inlinable public var rateLimit: RateLimit? {
        get { storage.fields.rateLimit }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.rateLimit }
    }
    /// Whether a trigger may pass `force` to run inside the cooldown window (`force: true`).
    @inlinable public var allowsForce: Bool {
        get { storage.fields.allowsForce }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.allowsForce }
    }
    /// The locks its runs take, all at once, before they start (`locks`), each with its limit
    /// (the config's `limits`); a run whose locks are not all free waits `queued`. Empty for none.
    @inlinable public var locks: [LockClaim] {
        get { storage.fields.locks }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.locks }
    }
    /// When systemd's timers trigger the action, as `OnCalendar=` expressions (`schedule`), each
    /// checked by `systemd-analyze calendar` at load; empty for none.
    @inlinable public var schedules: [String] {
        get { storage.fields.schedules }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.schedules }
    }
    /// The most a scheduled firing is delayed at random (`scheduleJitter`, `RandomizedDelaySec=`).
    @inlinable public var scheduleJitter: Duration? {
        get { storage.fields.scheduleJitter }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.scheduleJitter }
    }
    /// Whether a firing missed while the machine was off runs at boot (`catchUp`, `Persistent=`).
    @inlinable public var catchUp: Bool {
        get { storage.fields.catchUp }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.catchUp }
    }
    /// How many bytes of each run's output the history keeps (`output.keep`): the first and the
    /// last half of it once a run writes more; 0 keeps none.
    @inlinable public var outputKeep: Int64 {
        get { storage.fields.outputKeep }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.outputKeep }
    }
    /// The most bytes of files a run may leave in `$BATON_ARTIFACTS` to have them kept with it
    /// (`artifacts: { keep: "100MiB" }`); nil: the action keeps no artifacts (no directory is made).
    @inlinable public var artifactsKeep: Int64? {
        get { storage.fields.artifactsKeep }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.artifactsKeep }
    }
    /// Whether the process's stdout and stderr are a pseudo-terminal (`tty: true`), so that
    /// programs line-buffer and colour as on a terminal; its output is then one stream, stdout.
    @inlinable public var tty: Bool {
        get { storage.fields.tty }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.tty }
    }
    /// Whether a run's process outlives batond (`survivesRestart`, true unless the config says
    /// false): it runs under `baton-shim`, which a crash or restart of batond leaves running, and
    /// the next batond adopts the run. False: recovery kills it and shutdown cancels it, as before.
    @inlinable public var survivesRestart: Bool {
        get { storage.fields.survivesRestart }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.survivesRestart }
    }
    /// The actions a run's end triggers (`on: { failure, success, change }`), resolved at load.
    @inlinable public var hooks: HookTargets {
        get { storage.fields.hooks }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.hooks }
    }
    /// The actions a run first triggers (under `join`) and waits for (`needs`), resolved at load;
    /// it starts once each of their runs succeeded, and fails without starting when one did not.
    @inlinable public var needs: [NeedTarget] {
        get { storage.fields.needs }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.needs }
    }
    /// Who must approve each run before it starts (`approve`); nil: runs start without one.
    @inlinable public var approve: ApprovalRule? {
        get { storage.fields.approve }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.approve }
    }
}
