/// A trigger resolved against one generation of the config: its action as it was then, its
/// checked params, key and policy. The conductor decides it without looking anything up.
///
/// A value, held as one reference to its fields, shared until changed: the service, the
/// conductor's event and the engine's decision each carry the trigger, and a copy is a retain
/// where its 12 fields inline were a `memcpy` and the retains of their strings and maps (issue
/// 39). The fields are never written: a change makes a new storage.
public struct Trigger: Sendable {
    @usableFromInline var storage: Storage

    public init(action: Action, key: String, policy: Policy, params: [String: String], peer: Peer?, runner: RunnerBox? = nil,
                force: Bool = false, via: String? = nil, delivery: Delivery? = nil, slot: Timestamp? = nil,
                secrets: [String: String] = [:]) {
        storage = Storage(Fields(action: action, key: key, policy: policy, params: params, peer: peer, runner: runner, force: force,
                                 slot: slot, via: via, delivery: delivery, secrets: secrets))
    }
}

extension Trigger: Equatable {
    public static func == (lhs: Trigger, rhs: Trigger) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }
}

// Reflected as its fields, as the struct that held them was: `dump` and a failed `#expect` show them.
extension Trigger: CustomReflectable {
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: storage.fields).children, displayStyle: .struct)
    }
}

extension Trigger {
    /// A trigger's fields, behind one reference, never changed: a change makes a new storage
    /// (`Trigger`'s setters), so a storage two values share is only read, and the class is
    /// `Sendable` as the compiler checks it.
    @usableFromInline final class Storage: Sendable {
        @usableFromInline let fields: Fields

        @usableFromInline init(_ fields: Fields) { self.fields = fields }
    }

    /// The stored fields, in the order of the public properties, with their names and meaning.
    @usableFromInline package struct Fields: Equatable, Sendable {
        @usableFromInline package var action: Action
        @usableFromInline package var key: String
        @usableFromInline package var policy: Policy
        @usableFromInline package var params: [String: String]
        @usableFromInline package var peer: Peer?
        @usableFromInline package var runner: RunnerBox?
        @usableFromInline package var force: Bool
        @usableFromInline package var slot: Timestamp?
        @usableFromInline package var via: String?
        @usableFromInline package var neededBy: Int64? = nil
        @usableFromInline package var delivery: Delivery?
        @usableFromInline package var secrets: [String: String]
    }
}

extension Trigger {
    // Each `_modify` writes the new storage back in a `defer`, so an inout access that throws keeps
    // what it changed before the throw, as a stored property did.
    /// The action, as this generation of the config defines it.
    @inlinable public var action: Action {
        get { storage.fields.action }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.action }
    }
    /// The single-flight key: the action, and the values of the params it keys on.
    @inlinable public var key: String {
        get { storage.fields.key }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.key }
    }
    /// The policy the trigger uses: the action's, or one it allows that the trigger asked for.
    @inlinable public var policy: Policy {
        get { storage.fields.policy }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.policy }
    }
    /// The checked params (secret values masked).
    @inlinable public var params: [String: String] {
        get { storage.fields.params }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.params }
    }
    /// Who triggered (`SO_PEERCRED`); nil for a trigger not from a peer.
    @inlinable public var peer: Peer? {
        get { storage.fields.peer }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.peer }
    }
    /// The body given with `Conductor.run` by this trigger, run if the trigger creates the run.
    @inlinable public var runner: RunnerBox? {
        get { storage.fields.runner }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.runner }
    }
    /// Run even inside the action's cooldown window (honoured only where the action allows `force`).
    @inlinable public var force: Bool {
        get { storage.fields.force }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.force }
    }
    /// The schedule slot the trigger fires (`--scheduled`), rounded to the schedule: triggers of
    /// one action and slot make at most one run.
    @inlinable public var slot: Timestamp? {
        get { storage.fields.slot }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.slot }
    }
    /// Where a trigger from beyond the socket came from ("webhook deploy from 203.0.113.7,
    /// delivery 72d3…"), kept in the detail of the run's first transition.
    @inlinable public var via: String? {
        get { storage.fields.via }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.via }
    }
    /// The run whose `needs` asks this trigger (a fleet's): the new run's origin is the one that run passes on.
    @inlinable public var neededBy: Int64? {
        get { storage.fields.neededBy }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.neededBy }
    }
    /// The webhook delivery the trigger is, if any: recorded with the run it creates or joins, in
    /// the same write (a rejected trigger records none, so a redelivery may try again).
    @inlinable public var delivery: Delivery? {
        get { storage.fields.delivery }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.delivery }
    }
    /// The values of the action's secret params (`params` holds `***` for them): the process
    /// gets them, nothing keeps them but the run in flight (`Action.seal`).
    @inlinable public var secrets: [String: String] {
        get { storage.fields.secrets }
        _modify { var fields = storage.fields; defer { storage = Storage(fields) }; yield &fields.secrets }
    }
}
