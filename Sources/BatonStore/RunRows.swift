import BatonCore

/// The rows of the runs a group commit changes, held until the group's end so that each is
/// written with ONE row write: a run created, started and ended in the same group is one INSERT with its latest
/// phase and fields, and its transition rows. Each transition is checked as it comes (by
/// `Phase.allows` and against the phase the row has then, as the UPDATE's `WHERE phase = ?`
/// checks it), so an illegal one still fails its own item. What refers to a held run and has
/// rows of its own waits with it (its output, written after the run's row, in order) or writes
/// the run's row first (a trigger record, a delivery: their order among other runs' is kept).
/// A run already in the table that the group changes more than once is read once and UPDATEd once
/// at the group's end, whatever number of its transitions (start, process group, end) the group
/// holds; its transition rows are written as they come. One it changes once is UPDATEd at once.
struct RunRows {
    private var held: [Int64: HeldRun] = [:]
    /// The runs already in the table that the group changes more than once (a start and its
    /// process group, an end): only those are read and held; a run changed once is UPDATEd at
    /// once, one statement, as without this.
    /// Sorted, each id once. An array, not a `Set`: a group holds a few changes, and a `Dictionary`
    /// of counts, its filtered copy and a `Set` built for each group were 5,400 instructions a run
    /// (issue 39).
    private let repeated: [Int64]

    /// Rows for a group of `entries`, which says which runs it changes more than once.
    init<Entries: Sequence>(for entries: Entries) where Entries.Element == JournalEntry {
        var changed: [Int64] = []
        for entry in entries {
            switch entry {
            case let .transition(transition): changed.append(transition.runID)
            case let .processGroup(runID, _, _): changed.append(runID)
            default: break
            }
        }
        changed.sort()
        var repeated: [Int64] = []
        for (earlier, id) in zip(changed, changed.dropFirst()) where id == earlier && repeated.last != id { repeated.append(id) }
        self.repeated = repeated
    }

    /// Whether the group changes the run more than once.
    private func isRepeated(_ id: Int64) -> Bool {
        guard !repeated.isEmpty else { return false }
        var (low, high) = (0, repeated.count)
        while low < high {
            let middle = (low + high) / 2
            if repeated[middle] < id { low = middle + 1 } else { high = middle }
        }
        return low < repeated.count && repeated[low] == id
    }

    /// A run whose row waits for the group's end: the row as it is now, and for a run created in
    /// the group its transitions and the entries that wait for its row.
    struct HeldRun {
        /// The run created in this group, or nil for one already in the table.
        var created: RunSnapshot?
        var phase: Phase
        /// Transitions to write after the created run's row (one in the table has them written at once).
        var transitions: [Transition] = []
        var waiting: [JournalEntry] = []
        var startedAt: Int64?, endedAt: Int64?, attempts: Int64 = 0
        var exitCode: Int32?, signal: Int32?, reason: String?, error: String?
        var pgid: Int32?, pgidStart: String?, progress: String?
        var cpuUser: Int64?, cpuSystem: Int64?, memoryPeak: Int64?
    }

    /// Writes an entry, or holds it with its run's row.
    mutating func write(_ entry: JournalEntry, on db: Connection) throws {
        switch entry {
        case let .created(run, transition):
            // A second creation of one id: the first is written, and the second fails as it did.
            if held[run.id] != nil { try flush(run.id, on: db) }
            guard Phase.allows(from: transition.from, to: transition.to) else {
                throw JournalWriter.IllegalTransition(transition: transition)
            }
            held[run.id] = HeldRun(created: run, phase: run.phase, transitions: [transition])
        case let .transition(transition) where held[transition.runID] == nil && !isRepeated(transition.runID):
            try JournalWriter.write(entry, on: db)
        case let .transition(transition):
            if held[transition.runID] == nil, let row = try HeldRun.read(transition.runID, on: db) { held[transition.runID] = row }
            // A run in no table and not created here: written as before, which refuses it.
            guard held[transition.runID] != nil else { return try JournalWriter.write(entry, on: db) }
            try held[transition.runID]!.apply(transition)
            if held[transition.runID]!.created == nil { try JournalWriter.insert(transition, on: db) }
        case let .processGroup(runID, pgid, identity) where held[runID] != nil:
            held[runID]!.pgid = pgid
            held[runID]!.pgidStart = identity
        case let .output(runID, _, _) where held[runID] != nil:
            held[runID]!.waiting.append(entry)
        case let .outputChunks(write) where held[write.runID] != nil:
            held[write.runID]!.waiting.append(entry)
        case let .approval(runID, _) where held[runID] != nil:
            held[runID]!.waiting.append(entry)
        case let .origin(runID, _) where held[runID] != nil:
            held[runID]!.waiting.append(entry)
        case let .stopAsked(runID, _) where held[runID] != nil:
            held[runID]!.waiting.append(entry)
        case let .trigger(record):
            if let run = record.runID, held[run] != nil { try flush(run, on: db) }
            try JournalWriter.write(entry, on: db)
        case let .delivery(_, runID, _):
            if held[runID] != nil { try flush(runID, on: db) }
            try JournalWriter.write(entry, on: db)
        case let .needs(runID, needed):
            for id in [runID] + needed.map(\.run) where held[id] != nil { try flush(id, on: db) }
            try JournalWriter.write(entry, on: db)
        default:
            try JournalWriter.write(entry, on: db)
        }
    }

    /// Writes every held run (before other work reads the table, and at the group's end).
    mutating func flush(on db: Connection) throws {
        for id in held.keys.sorted() { try flush(id, on: db) }
    }

    /// Writes one held run: its row, its transitions in order, then what waited for it.
    private mutating func flush(_ id: Int64, on db: Connection) throws {
        guard let run = held.removeValue(forKey: id) else { return }
        guard let created = run.created else {
            try db.cached("""
                UPDATE runs SET phase = ?, started_at = ?, ended_at = ?, attempts = ?, exit_code = ?, signal = ?, reason = ?, error = ?,
                                pgid = ?, pgid_start = ?, cpu_user = ?, cpu_system = ?, memory_peak = ?, progress = ?
                WHERE id = ?
                """) {
                try $0.execute(run.phase.rawValue, run.startedAt, run.endedAt, run.attempts, run.exitCode, run.signal, run.reason, run.error,
                               run.pgid, run.pgidStart, run.cpuUser, run.cpuSystem, run.memoryPeak, run.progress, id)
            }
            for entry in run.waiting { try JournalWriter.write(entry, on: db) }
            return
        }
        try db.cached("""
            INSERT INTO runs (id, action, key, phase, policy, params, trigger_uid, trigger_gid, trigger_pid, queued_at, via, slot,
                              hook_run, hook_action, hook_event, started_at, ended_at, attempts, exit_code, signal, reason, error,
                              pgid, pgid_start, cpu_user, cpu_system, memory_peak)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """) {
            let (c, t, hook) = (created, created.trigger, created.hook)
            try $0.execute(c.id, c.action, c.key, run.phase.rawValue, c.policy.rawValue, JSONText.object(c.params), t.map { Int64($0.uid) },
                           t.map { Int64($0.gid) }, t.map { Int64($0.pid) }, c.queuedAt.rawValue, c.via, c.slot?.rawValue, hook?.run,
                           hook?.action, hook?.event.rawValue, run.startedAt, run.endedAt, run.attempts, run.exitCode, run.signal, run.reason,
                           run.error, run.pgid, run.pgidStart, run.cpuUser, run.cpuSystem, run.memoryPeak)
        }
        for transition in run.transitions { try JournalWriter.insert(transition, on: db) }
        for entry in run.waiting { try JournalWriter.write(entry, on: db) }
    }
}

extension RunRows.HeldRun {
    /// What `JournalWriter.apply`'s UPDATE does to the row, done to the held one: the same
    /// checks (a legal change from the phase the row has), the same fields.
    mutating func apply(_ t: Transition) throws {
        guard Phase.allows(from: t.from, to: t.to), t.from == phase else { throw JournalWriter.IllegalTransition(transition: t) }
        let d = t.detail
        phase = t.to
        switch t.to {
        case .queued:
            pgid = nil
        case .loading:
            startedAt = startedAt ?? t.at.rawValue
            attempts = Int64(d.attempt ?? 1)
            pgid = nil
        case .retrying:
            exitCode = d.exitCode
            signal = d.signal
            error = d.error
            account(d)
        case .success, .failure, .cancelled:
            endedAt = t.at.rawValue
            exitCode = d.exitCode ?? exitCode
            signal = d.signal ?? signal
            reason = d.reason
            error = t.to == .success ? nil : d.error
            pgid = nil
            progress = nil
            account(d)
        }
        if created != nil { transitions.append(t) }
    }

    /// A run's row as the table has it, or nil when there is none.
    static func read(_ id: Int64, on db: Connection) throws -> Self? {
        try db.cached("""
            SELECT phase, started_at, ended_at, attempts, exit_code, signal, reason, error, pgid, pgid_start, progress,
                   cpu_user, cpu_system, memory_peak
            FROM runs WHERE id = ?
            """) { statement in
            try statement.bind([.integer(id)])
            guard try statement.step(), let phase = statement.string(0).flatMap(Phase.init(rawValue:)) else { return nil }
            let int32 = { (column: Int32) in statement.int64(column).map { Int32(truncatingIfNeeded: $0) } }
            return Self(created: nil, phase: phase, startedAt: statement.int64(1), endedAt: statement.int64(2),
                        attempts: statement.int64(3) ?? 0, exitCode: int32(4), signal: int32(5), reason: statement.string(6),
                        error: statement.string(7), pgid: int32(8), pgidStart: statement.string(9), progress: statement.string(10),
                        cpuUser: statement.int64(11), cpuSystem: statement.int64(12), memoryPeak: statement.int64(13))
        }
    }

    /// An attempt's figures added as `JournalWriter.apply`'s columns add them: CPU times add up
    /// (a missing figure leaves the other), the memory peak is the larger.
    private mutating func account(_ d: TransitionDetail) {
        cpuUser = Self.sum(cpuUser, d.cpuUser)
        cpuSystem = Self.sum(cpuSystem, d.cpuSystem)
        memoryPeak = Self.larger(memoryPeak, d.memoryPeak)
    }

    private static func sum(_ a: Int64?, _ b: Int64?) -> Int64? {
        guard let a, let b else { return a ?? b }
        return a + b
    }

    private static func larger(_ a: Int64?, _ b: Int64?) -> Int64? {
        guard let a, let b else { return a ?? b }
        return max(a, b)
    }
}
