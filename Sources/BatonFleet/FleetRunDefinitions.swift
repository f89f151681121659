import BatonCore
import BatonWire
import FoundationEssentials

/// The definitions runs were triggered with (`revisions`, migration 0028, by action name and
/// revision, `runs.revision`; runs made before it, `definitions`, migration 0027, by name and
/// fingerprint): written by the host that makes the first such run, in that run's transaction
/// (`FleetRevisions.swift`); read by whichever host starts a run or decides its approval, so that
/// every host does so by the run's definition, not by its own config of the moment (audit D4).
enum FleetRunDefinitions {
    /// A definition's key in a host's `Cache`: its revision (32 hex digits) or, for a run made before
    /// version 28, its fingerprint (16), and its action's name.
    static func key(_ name: String, _ fingerprint: String) -> String { fingerprint + ":" + name }

    /// What one connection remembers of the table, by `key` (`PGConnection.definitions`): the
    /// definitions it wrote since it opened (whose insert it skips), those the transaction in
    /// progress inserted (`pending`: written once it commits, forgotten if it does not), and those
    /// it read. Confined to
    /// the connection's thread (no lock); each connection learns on its own, at the cost of one
    /// idempotent insert or one read per revision (or fingerprint) and connection. Both are bounded: past
    /// `capacity` a set is emptied and fills again. What the host loaded from its config (which
    /// decides what a process may be) is the conductor's (`Conductor.earlierActions`), not this.
    struct Cache {
        static let capacity = 256
        private(set) var written: Set<String> = []
        /// Read only through `known`, which empties it when what the conductor loaded changed.
        private var read: [String: RunDefinition] = [:]
        /// Actions' revisions, by name, each with the action it was computed for (`revision(of:)`).
        var revisions: [String: [(Action, String)]] = [:]
        /// Rows the transaction in progress inserted: `written` only once it commits (`ended`).
        var pending: Set<String> = []

        /// Whether the transaction in progress must insert the row of `key` for a run it makes: not
        /// written on this connection, nor inserted by this transaction already.
        func needsWrite(_ key: String) -> Bool { !written.contains(key) && !pending.contains(key) }

        /// Notes the row of `key` inserted by the transaction in progress.
        mutating func inserting(_ key: String) { pending.insert(key) }

        /// The transaction in progress ended (or a new one begins: `committed` false): its rows are
        /// written where it committed, and forgotten where it did not (they were rolled back).
        mutating func ended(committed: Bool) {
            if committed { wrote(pending) }
            pending.removeAll()
        }

        /// Notes rows committed.
        mutating func wrote(_ keys: some Collection<String>) {
            guard !keys.isEmpty else { return }
            if written.count + keys.count > Self.capacity { written.removeAll() }
            written.formUnion(keys)
        }

        /// The conductor's `loadedGeneration` when `read` was last found current.
        private(set) var readLoaded = 0

        /// The definition of `key` looked up before, unless what the conductor has loaded changed
        /// since (`loaded`, its `loadedGeneration` now): a reload or a definition forgotten may turn
        /// a refusal into a definition or the other way round, so then every look-up is made again.
        mutating func known(_ key: String, loaded: Int) -> RunDefinition? {
            if loaded != readLoaded {
                read.removeAll()
                readLoaded = loaded
            }
            return read[key]
        }

        /// Notes a definition read from the table (or refused: a miss remembered, logged once per connection).
        mutating func remember(_ found: RunDefinition, as key: String) {
            if read.count >= Self.capacity { read.removeAll() }
            read[key] = found
        }
    }
}

/// What a host finds for a run (`FleetCoordinator.lookUp`): the action it runs and decides by; none (its
/// action is not configured here and no definition is stored: cancelled, as `removed`); or refused (a
/// stored definition whose process no config of this host's ever gave, or a row it cannot read: the run
/// ends `failure`, reason `definition`, and nothing runs).
enum RunDefinition {
    case action(Action)
    case none
    case refused(String)

    var action: Action? {
        guard case let .action(action) = self else { return nil }
        return action
    }
}

extension Action {
    /// Whether `stored`'s process (every field `deciding` does not take) is this loaded definition's,
    /// by the codec's canonical text; `runAs` by its names only (the row's uid and gid are another host's).
    /// Both are compared as a row keeps them (`storedForm`: env values as digests): `stored` may be
    /// a row's (digests) or a definition `lookUp` gave (this host's values).
    func runsAsStored(_ stored: Action) -> Bool {
        guard name == stored.name, stored.runAs?.named == runAs?.named, stored.runAs?.groupNamed == runAs?.groupNamed else { return false }
        var theirs = stored
        theirs.runAs = runAs
        guard let mine = try? deciding(as: theirs).storedForm(), let theirs = try? theirs.storedForm() else { return false }
        return ActionCodec.encode(mine) == ActionCodec.encode(theirs)
    }

    /// Whether `stored` (a row's) runs what this loaded definition runs in every field its
    /// fingerprint covers (exec, cwd, env by digest, user, umask, timeout...), with the row's
    /// decision fields set alike and `runAs` by its names (another host resolved the row's).
    func fingerprintsAlike(_ stored: Action) throws -> Bool {
        guard stored.runAs?.named == runAs?.named, stored.runAs?.groupNamed == runAs?.groupNamed else { return false }
        var theirs = stored
        theirs.runAs = runAs
        return try deciding(as: theirs).storedForm().fingerprint == theirs.storedForm().fingerprint
    }

    /// This definition as a fleet's `definitions` row keeps it (review M5): each env value as its
    /// SHA-256 digest (`sha256:HEX`, from libcrypto), never in clear, since a row outlives the
    /// config in every backup and replica and a database reader is not a host. A host runs its own
    /// config's values (`FleetCoordinator.lookUp`) and only compares them, so it needs no other.
    /// (A low-entropy value can still be guessed from its digest; `exec`'s arguments are kept as
    /// they are: put secrets in env, or in a file the action reads.)
    /// A value that is a digest already is kept: the form is the same whether made once or twice.
    func storedForm() throws -> Action {
        var action = self
        action.env = try env.mapValues { value in try Self.isDigest(value) ? value : "sha256:" + SHA256.hex(Array(value.utf8)) }
        return action
    }

    /// Whether an env value is a digest as `storedForm` writes it: `sha256:` and 64 lowercase hex digits.
    static func isDigest(_ value: String) -> Bool {
        let digits = value.utf8.dropFirst(7)
        return value.hasPrefix("sha256:") && digits.count == 64 && digits.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

extension FleetCoordinator {
    /// The definition a run of action `name` whose row keeps `ref` starts and is decided by
    /// (`lookUp`); nil where there is none or it is refused.
    func definition(of name: String, _ ref: DefinitionRef, on db: PGConnection) throws -> Action? {
        try lookUp(name, ref, on: db).action
    }

    /// A run's definition. The database never chooses what a host runs: this host's config where
    /// the run's revision is the config's (no read; a run made before version 28, where its
    /// fingerprint is); a run made before version 27 (no row stored), this host's config, as before;
    /// else the stored row (read once, remembered) gives only what a database writer may decide
    /// (`Action.deciding(as:)`: its hooks and locks too, which the fingerprint leaves out), and what
    /// the process is comes from a definition this host loaded from its own config, now or before a
    /// reload (`Conductor.earlierActions`), whose process is the row's (`Action.runsAsStored`), else
    /// from its config where the fingerprint is the run's (a host's own limits or output settings,
    /// as before version 28). Neither, or a row that cannot be read (a newer codec's, a corrupt one):
    /// refused, logged once per connection, remembered there (`Cache`).
    func lookUp(_ name: String, _ ref: DefinitionRef, on db: PGConnection) throws -> RunDefinition {
        // Read before the actions: a reload after it makes the next look-up start again (review s36 L4).
        let loaded = conductor.loadedGeneration
        let configured = conductor.action(named: name)
        guard let fingerprint = ref.fingerprint, let key = ref.key(name) else { return configured.map(RunDefinition.action) ?? .none }
        if let configured {
            let same = if let revision = ref.revision { try db.definitions.revision(of: configured) == revision } else { configured.fingerprint == fingerprint }
            if same { return .action(configured) }
        }
        if let known = db.definitions.known(key, loaded: loaded) { return known }
        let named = ref.revision ?? fingerprint  // what names the row, in what is said
        guard let text = try FleetRunDefinitions.read(name, ref, on: db) else {
            // A run made before version 27 has no row: its config, as then. One with a revision always
            // has one (written in its transaction, never deleted): refused, not run as the config.
            guard ref.revision != nil else { return configured.map(RunDefinition.action) ?? .none }
            let missing = RunDefinition.refused("action \(name)'s definition \(named) is missing from the database")
            log("the definition \(named) of action \(name) is missing from the database: its runs end, reason definition")
            db.definitions.remember(missing, as: key)
            return missing
        }
        let found: RunDefinition
        do {
            // Its needs and hooks by name: this host's config, else what it loaded before a reload.
            let stored = try ActionCodec.decode(text) { [conductor] in conductor.action(named: $0) ?? conductor.earlierActions(named: $0).last }
            let loaded = [configured].compactMap { $0 } + conductor.earlierActions(named: name)
            if let own = loaded.first(where: { $0.runsAsStored(stored) }) {
                found = .action(own.deciding(as: stored))
            } else if let configured, configured.fingerprint == fingerprint, try configured.fingerprintsAlike(stored) {
                // Its fingerprint's process (exec, env, user...) is the config's, the rest (limits,
                // output settings) this host's own: as before version 28. A row edited in any
                // fingerprinted field fails this and is refused below (review s35 revisions M1).
                found = .action(configured.deciding(as: stored))
            } else {
                found = .refused("action \(name)'s definition \(named) is not one \(host.name) configured")
                log("the definition \(named) of action \(name) is not one this host configured: its runs end, reason definition")
            }
        } catch let failure as ActionCodec.Failure where failure.field == "needs" {
            // Never a run without a need it was triggered with (one machine's keeps its needed action).
            found = .refused("action \(name)'s definition \(named) \(failure.message.replacing("this host", with: host.name))")
            log("the definition \(named) of action \(name) \(failure.message): its runs end, reason definition")
        } catch {
            found = .refused("action \(name)'s definition \(named) could not be read on \(host.name) (\(error)): it needs a newer batond")
            log("the definition \(named) of action \(name) could not be read (\(error)): its runs end, reason definition")
        }
        db.definitions.remember(found, as: key)
        return found
    }

    /// A feed tick's: forgets the definitions a reload replaced (`Conductor.earlierActions`) that no
    /// unfinished run references any more (by name and fingerprint), nor the needs or hooks of one
    /// kept (a waiting deploy's build, which a reload removed with deploy's needs: its row names
    /// it, and its start must find it, as one machine's run keeps its needed action): what a host
    /// keeps is its config and what its fleet still runs. Only those read before the look are
    /// forgotten: one a reload replaces meanwhile waits for the next tick.
    func keepLoaded(on db: PGConnection) throws {
        let earlier = conductor.earlierActions()
        guard !earlier.isEmpty else { return }
        let names = Set(earlier.map(\.name))
        let rows = try db.query("""
            SELECT DISTINCT action, definition FROM runs WHERE action = ANY ($1::text[])
            AND phase NOT IN ('success', 'failure', 'cancelled') AND definition IS NOT NULL
            """, [FleetJournal.textArray(Array(names))]).rows
        let referenced = Set(rows.compactMap { row in row[0].flatMap { name in row[1].map { FleetRunDefinitions.key(name, $0) } } })
        let kept = earlier.filter { referenced.contains(FleetRunDefinitions.key($0.name, $0.fingerprint)) }
        let targets = Set(kept.flatMap { $0.needs.map(\.action.name) + $0.hooks.targets.values.map(\.action.name) })
        conductor.forgetEarlier(earlier.filter { !referenced.contains(FleetRunDefinitions.key($0.name, $0.fingerprint)) && !targets.contains($0.name) })
    }

    /// The definitions `runs` were triggered with (`lookUp`), by id.
    func definitions(of runs: [RunSnapshot], on db: PGConnection) throws -> [Int64: RunDefinition] {
        guard !runs.isEmpty else { return [:] }
        let rows = try db.query("SELECT \((["id"] + DefinitionRef.columns()).joined(separator: ", ")) FROM runs WHERE id = ANY ($1::bigint[])",
                                ["{" + runs.map { String($0.id) }.joined(separator: ",") + "}"]).rows
        let refs = Dictionary(rows.compactMap { row in row[0].flatMap { Int64($0) }.map { ($0, DefinitionRef(row.dropFirst())) } },
                              uniquingKeysWith: { first, _ in first })
        var actions: [Int64: RunDefinition] = [:]
        for run in runs { actions[run.id] = try lookUp(run.action, refs[run.id] ?? DefinitionRef(fingerprint: nil, revision: nil), on: db) }
        return actions
    }

    /// The insert of each of `actions`' revisions (those their runs were made with) that `db` has
    /// not written since it opened (`Cache`), for the transaction that makes their runs, in key
    /// order (two transactions inserting the same two rows wait for each other in one order, never
    /// in a cycle), noted pending (`Cache.ended` once it commits).
    func revisionInserts(_ actions: [(revision: String, action: Action)], on db: PGConnection) throws -> [FleetJournal.Statement] {
        var new: [String: (revision: String, action: Action)] = [:]
        for made in actions {
            let key = FleetRunDefinitions.key(made.action.name, made.revision)
            if db.definitions.needsWrite(key) { new[key] = made }
        }
        let inserts = try new.sorted { $0.key < $1.key }.map { try FleetRunDefinitions.insert($0.value.action, revision: $0.value.revision) }
        for key in new.keys { db.definitions.inserting(key) }
        return inserts
    }
}
