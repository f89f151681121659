import BatonCore
import BatonWire

/// Which stored definition a run was triggered with (`runs.definition`, `runs.revision`): its
/// action's fingerprint (what hosts compare to share a key's runs) and, since fleet version 28,
/// its revision (the whole definition: `Action.revision`). A run made before 28 has no revision
/// and is decided by its fingerprint's row (`definitions`), as then.
struct DefinitionRef: Sendable, Hashable {
    var fingerprint: String?
    var revision: String?

    /// Its two columns of `runs` (as `alias`, where given), in the order `init(_:)` reads them:
    /// every read of a run's definition selects these.
    static func columns(_ alias: String? = nil) -> [String] {
        ["definition", "revision"].map { column in alias.map { "\($0).\(column)" } ?? column }
    }

    /// The reference in a row's two columns (`columns`, in that order).
    init(_ columns: some Collection<String?>) {
        fingerprint = columns.first ?? nil
        revision = columns.dropFirst().first ?? nil
    }

    init(fingerprint: String?, revision: String?) {
        self.fingerprint = fingerprint
        self.revision = revision
    }

    /// Its key in a connection's `FleetRunDefinitions.Cache`: by revision where it has one (32 hex
    /// digits, never a fingerprint's 16).
    func key(_ name: String) -> String? { (revision ?? fingerprint).map { FleetRunDefinitions.key(name, $0) } }
}

extension Action {
    /// The whole definition as a digest (review of fleetdefs14, M4): the first 32 hex digits of the
    /// SHA-256 (libcrypto) of its canonical text (`ActionCodec`, env values as digests: `storedForm`)
    /// with what each host resolves for itself left out (`revisionForm`). Two definitions that
    /// differ in anything else, hooks, locks and limits included (which the fingerprint leaves out),
    /// have two revisions; one config on two hosts has one.
    func revision() throws -> String {
        String(try SHA256.hex(Array(ActionCodec.encode(try revisionForm()).utf8)).prefix(32))
    }

    /// `storedForm` without what a host resolves from its own user and group databases (review s35
    /// revisions M2): `runAs` by its names only (its uid, gid, groups, home and shell are each
    /// host's, as `runsAsStored` compares it), and `allow` (its names resolved to uids and gids).
    func revisionForm() throws -> Action {
        var action = try storedForm()
        action.runAs = runAs.map { RunAs(named: $0.named, groupNamed: $0.groupNamed, user: "", uid: 0, gid: 0, groups: [], home: "", shell: "") }
        action.allow = nil
        return action
    }
}

extension FleetRunDefinitions {
    /// Stores `action` under its name and revision, once fleet-wide (the text of a revision never changes).
    static func insert(_ action: Action, revision: String) throws -> FleetJournal.Statement {
        ("INSERT INTO revisions (revision, name, action) VALUES ($1, $2, $3) ON CONFLICT (revision, name) DO NOTHING",
         [revision, action.name, ActionCodec.encode(try action.storedForm())])
    }

    /// The stored text of action `name`'s definition `ref`: its revision's row, else (a run made
    /// before version 28) its fingerprint's.
    static func read(_ name: String, _ ref: DefinitionRef, on db: PGConnection) throws -> String? {
        if let revision = ref.revision {
            return try db.query("SELECT action FROM revisions WHERE revision = $1 AND name = $2", [revision, name]).first?[0] ?? nil
        }
        guard let fingerprint = ref.fingerprint else { return nil }
        return try db.query("SELECT action FROM definitions WHERE fingerprint = $1 AND name = $2", [fingerprint, name]).first?[0] ?? nil
    }

    /// In a transaction that makes a run of `action` (a hook's): inserts its revision's row unless
    /// `db` wrote it already or this transaction did (`Cache`), noted pending until it commits.
    /// Returns the revision, for the run's row.
    static func store(_ action: Action, on db: PGConnection) throws -> String {
        let revision = try db.definitions.revision(of: action)
        let key = key(action.name, revision)
        guard db.definitions.needsWrite(key) else { return revision }
        try db.query(insert(action, revision: revision))
        db.definitions.inserting(key)
        return revision
    }
}

extension FleetRunDefinitions.Cache {
    /// `action`'s revision, computed once per action as loaded on this connection: a config's
    /// actions are the same values until a reload. A few per name (the config's, a hook's or a
    /// need's copy of it, one from before a reload), newest first, so that copies do not evict each other.
    mutating func revision(of action: Action) throws -> String {
        if let (_, revision) = revisions[action.name]?.first(where: { $0.0 == action }) { return revision }
        let revision = try action.revision()
        if revisions.count >= Self.capacity { revisions.removeAll() }
        revisions[action.name] = [(action, revision)] + (revisions[action.name] ?? []).prefix(3)
        return revision
    }
}
