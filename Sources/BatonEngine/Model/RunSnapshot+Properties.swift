extension RunSnapshot {
    /// Its id, increasing in creation order.
    @inlinable public var id: Int64 {
        get { storage.fields.id }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.id }
    }
    /// The name of the action it runs.
    @inlinable public var action: String {
        get { storage.fields.action }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.action }
    }
    /// Its single-flight key: the action, and the values of the params the action keys on.
    @inlinable public var key: String {
        get { storage.fields.key }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.key }
    }
    /// Where it is: `queued`, `loading`, `retrying`, or how it ended.
    @inlinable public var phase: Phase {
        get { storage.fields.phase }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.phase }
    }
    /// The policy its trigger used.
    @inlinable public var policy: Policy {
        get { storage.fields.policy }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.policy }
    }
    /// The params it was triggered with (secret values sealed).
    @inlinable public var params: [String: String] {
        get { storage.fields.params }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.params }
    }
    /// Who triggered it (`SO_PEERCRED`); nil for a run not triggered by a peer.
    @inlinable public var trigger: Peer? {
        get { storage.fields.trigger }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.trigger }
    }
    /// When it was created.
    @inlinable public var queuedAt: Timestamp {
        get { storage.fields.queuedAt }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.queuedAt }
    }
    /// When its first attempt started loading.
    @inlinable public var startedAt: Timestamp? {
        get { storage.fields.startedAt }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.startedAt }
    }
    /// When it ended.
    @inlinable public var endedAt: Timestamp? {
        get { storage.fields.endedAt }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.endedAt }
    }
    /// The attempts started so far.
    @inlinable public var attempts: Int {
        get { storage.fields.attempts }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.attempts }
    }
    /// The exit status of its last attempt that exited.
    @inlinable public var exitCode: Int32? {
        get { storage.fields.exitCode }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.exitCode }
    }
    /// The signal that ended its last attempt, when one did.
    @inlinable public var signal: Int32? {
        get { storage.fields.signal }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.signal }
    }
    /// Why it ended as it did (`timeout`, `replaced by run 12`, `shutdown`…), where a reason applies.
    @inlinable public var reason: String? {
        get { storage.fields.reason }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.reason }
    }
    /// What failed, in a sentence, for a run that did not succeed.
    @inlinable public var error: String? {
        get { storage.fields.error }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.error }
    }
    /// The uid that cancelled the run, when one did.
    @inlinable public var cancelledBy: UInt32? {
        get { storage.fields.cancelledBy }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.cancelledBy }
    }
    /// The latest progress the action reported.
    @inlinable public var progress: Progress? {
        get { storage.fields.progress }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.progress }
    }
    /// The median duration of the action's recent successful runs when this run was created, in
    /// microseconds: the basis of an estimated progress. Live runs only; not stored.
    @inlinable public var estimate: Int64? {
        get { storage.fields.estimate }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.estimate }
    }
    /// The host that runs it, in a fleet (nil on a single machine).
    @inlinable public var host: String? {
        get { storage.fields.host }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.host }
    }
    /// The seq of the run's latest transition, where the answer knows it (live runs and updates):
    /// lets a client that merges a snapshot with a stream of updates drop updates it already has.
    @inlinable public var seq: Int? {
        get { storage.fields.seq }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.seq }
    }
    /// The user CPU time of the run's processes, in microseconds: summed over its attempts; nil
    /// where none was measured.
    @inlinable public var cpuUser: Int64? {
        get { storage.fields.cpuUser }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.cpuUser }
    }
    /// The system CPU time of its processes, in microseconds, summed like `cpuUser`.
    @inlinable public var cpuSystem: Int64? {
        get { storage.fields.cpuSystem }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.cpuSystem }
    }
    /// The largest peak memory of any of its attempts, in bytes; nil where none was measured.
    @inlinable public var memoryPeak: Int64? {
        get { storage.fields.memoryPeak }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.memoryPeak }
    }
    /// Where the trigger that created the run came from, when not the socket ("webhook deploy from
    /// 203.0.113.7, delivery 72d3…"): the `via` of its `queued` transition; nil for a socket trigger.
    @inlinable public var via: String? {
        get { storage.fields.via }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.via }
    }
    /// The schedule slot the run was made for (`baton run --scheduled`): one run per action and
    /// slot; nil for a trigger that is not scheduled.
    @inlinable public var slot: Timestamp? {
        get { storage.fields.slot }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.slot }
    }
    /// The hook whose trigger made this run ("failure hook of deploy run 7"); nil for any other run.
    @inlinable public var hook: HookCause? {
        get { storage.fields.hook }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.hook }
    }
    /// What a queued run waits for when a lock it claims is not free ("waiting for lock db, held by
    /// migrate run 12"). Live runs only; not stored.
    @inlinable public var waiting: LockWait? {
        get { storage.fields.waiting }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.waiting }
    }
    /// When a debounced run's window ends ("debouncing, starts in 3.2s"), while it is open: a
    /// further trigger of the key pushes it back. Live runs only; not stored.
    @inlinable public var debounceUntil: Timestamp? {
        get { storage.fields.debounceUntil }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.debounceUntil }
    }
    /// When a run held back by its action's rate limit (`over: delay`) may start ("rate limited,
    /// starts in 12m"). Live runs only; not stored.
    @inlinable public var rateUntil: Timestamp? {
        get { storage.fields.rateUntil }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.rateUntil }
    }
    /// When a key's cooldown after this success closes, by the wall clock now (measured on the
    /// boot's clock, so a stepped wall clock does not move it). Status only; not stored.
    @inlinable public var coolsUntil: Timestamp? {
        get { storage.fields.coolsUntil }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.coolsUntil }
    }
    /// A follow-up's place in its key's line (`queue`): 1 starts next, when the run holding the
    /// key ends. Live runs only; not stored.
    @inlinable public var line: Int? {
        get { storage.fields.line }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.line }
    }
    /// The runs it needs (`needs`), each with its phase as last known: live, what a queued run
    /// waits for ("waiting for build-a run 41, build-b run 42"); `show`, from the history.
    @inlinable public var needs: [NeededRun]? {
        get { storage.fields.needs }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.needs }
    }
    /// The runs that need it (`show` only, from the history).
    @inlinable public var neededBy: [NeededRun]? {
        get { storage.fields.neededBy }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.neededBy }
    }
    /// Its approval (`approve`): what a queued run waits for ("waiting for approval by group:ops
    /// (until 14:05)"), then how it was decided. Nil for a run of an action without `approve`.
    @inlinable public var approval: ApprovalState? {
        get { storage.fields.approval }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.approval }
    }
}
