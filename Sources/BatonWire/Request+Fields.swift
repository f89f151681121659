import BatonEngine

extension Request {
    /// A request's fields, behind one reference, never changed: a change makes a new storage
    /// (`Request`'s setters), so a storage two values share is only read, and the class
    /// is `Sendable` as the compiler checks it.
    @usableFromInline final class Storage: Sendable {
        @usableFromInline let fields: Fields

        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    /// The stored fields, in the order of the public properties, with their names and meaning.
    @usableFromInline package struct Fields: Encodable, Equatable, Sendable {
        @usableFromInline package var id: RequestID? = nil
        @usableFromInline package var op: Operation
        @usableFromInline package var action: String? = nil
        @usableFromInline package var params: [String: String]? = nil
        @usableFromInline package var policy: Policy? = nil
        @usableFromInline package var detach: Bool? = nil
        @usableFromInline package var force: Bool? = nil
        @usableFromInline package var slot: Int64? = nil
        @usableFromInline package var dryRun: Bool? = nil
        @usableFromInline package var run: Int64? = nil
        @usableFromInline package var key: String? = nil
        @usableFromInline package var filter: HistoryFilter? = nil
        @usableFromInline package var after: WatchCursor? = nil
        @usableFromInline package var progress: Bool? = nil
        @usableFromInline package var from: Int64? = nil
        @usableFromInline package var follow: Bool? = nil
        @usableFromInline package var text: String? = nil
        @usableFromInline package var reason: String? = nil
        @usableFromInline package var duration: Int64? = nil
        @usableFromInline package var hold: Bool? = nil
        @usableFromInline package var name: String? = nil
        @usableFromInline package var actingAs: String? = nil
        @usableFromInline package var asGroup: String? = nil

        enum CodingKeys: String, CodingKey {
            case id, op, action, params, policy, detach, force, slot, dryRun, run, key, filter, progress, from, follow, text, reason, duration, hold, name, after
            case actingAs = "as"
            case asGroup
        }
    }
}

extension Request {
    // Each `_modify` writes the new storage back in a `defer`, so an inout access that throws keeps
    // what it changed before the throw, as a stored property did.
    @inlinable public var id: RequestID? {
        get { storage.fields.id }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.id }
    }
    @inlinable public var op: Operation {
        get { storage.fields.op }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.op }
    }
    /// trigger, cancel, watch: the action.
    @inlinable public var action: String? {
        get { storage.fields.action }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.action }
    }
    /// trigger: the params.
    @inlinable public var params: [String: String]? {
        get { storage.fields.params }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.params }
    }
    /// trigger: a policy other than the action's own.
    @inlinable public var policy: Policy? {
        get { storage.fields.policy }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.policy }
    }
    /// trigger: answer once the run is queued instead of at its end.
    @inlinable public var detach: Bool? {
        get { storage.fields.detach }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.detach }
    }
    /// trigger: run even inside the action's cooldown window, where the action allows `force`.
    @inlinable public var force: Bool? {
        get { storage.fields.force }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.force }
    }
    /// trigger: the schedule slot fired (`--scheduled`), in microseconds since 1970: triggers of one
    /// action and slot make at most one run.
    @inlinable public var slot: Int64? {
        get { storage.fields.slot }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.slot }
    }
    /// prune: count what retention would remove, without removing it.
    @inlinable public var dryRun: Bool? {
        get { storage.fields.dryRun }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.dryRun }
    }
    /// show, cancel, wait, approve, deny: the run.
    @inlinable public var run: Int64? {
        get { storage.fields.run }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.run }
    }
    /// cancel: only the runs of this key.
    @inlinable public var key: String? {
        get { storage.fields.key }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.key }
    }
    /// history: which runs.
    @inlinable public var filter: HistoryFilter? {
        get { storage.fields.filter }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.filter }
    }
    /// watch: the last transition the client saw: the transitions committed after it are sent
    /// first (a watch again after a restart or a stop of batond misses nothing).
    @inlinable public var after: WatchCursor? {
        get { storage.fields.after }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.after }
    }
    /// watch: also an `update` without a transition each time a run in flight reports progress.
    @inlinable public var progress: Bool? {
        get { storage.fields.progress }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.progress }
    }
    /// output: the position in the run's output to start from (0 when absent).
    @inlinable public var from: Int64? {
        get { storage.fields.from }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.from }
    }
    /// output: follow the run's output live until it ends.
    @inlinable public var follow: Bool? {
        get { storage.fields.follow }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.follow }
    }
    /// search: the text to find in the runs' kept output and their param values.
    @inlinable public var text: String? {
        get { storage.fields.text }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.text }
    }
    /// pause: why (required); deny: why (optional).
    @inlinable public var reason: String? {
        get { storage.fields.reason }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.reason }
    }
    /// pause: how long, in microseconds (absent: until `resume`).
    @inlinable public var duration: Int64? {
        get { storage.fields.duration }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.duration }
    }
    /// pause: queue the action's triggers while it lasts instead of refusing them (`--hold`).
    @inlinable public var hold: Bool? {
        get { storage.fields.hold }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.hold }
    }
    /// artifact: the file's name (its path under the run's `$BATON_ARTIFACTS`).
    @inlinable public var name: String? {
        get { storage.fields.name }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.name }
    }
    /// Any op, as `"as"`: serve it as this user of the machine would be served (their uid, gid
    /// and groups for every access check). Honoured only from root or batond's own user: the
    /// team's dashboard asks on behalf of the user a trusted proxy named.
    @inlinable public var actingAs: String? {
        get { storage.fields.actingAs }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.actingAs }
    }
    /// With `as`, as `"asGroup"`: serve the request as a member of this local group and of no other,
    /// with no user's own rights; `as` is then the person's name for the history (an e-mail address,
    /// a provider's name), not an account. Honoured, like `as`, only from root or batond's own user.
    @inlinable public var asGroup: String? {
        get { storage.fields.asGroup }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.asGroup }
    }
}
