import BatonCore

/// The runs a group commit creates, held until the group's end so that each is written with ONE
/// row write: a run created, started and ended in the same group is one INSERT with its latest
/// phase and fields, and its transition rows. Each transition is checked as it comes (by
/// `Phase.allows` and against the phase the row has then, as the UPDATE's `WHERE phase = ?`
/// checks it), so an illegal one still fails its own item. What refers to a held run and has
/// rows of its own waits with it (its output, written after the run's row, in order) or writes
/// the run's row first (a trigger record, a delivery: their order among other runs' is kept).
/// A run already in the table is changed by UPDATE, as before (`JournalWriter`).
struct RunRows {
    private var held: [Int64: HeldRun] = [:]

    /// A run created in this group and not yet written: its row as it is now, its transitions
    /// and the entries that wait for its row.
    struct HeldRun {
        var run: RunSnapshot
        var transitions: [Transition]
        var waiting: [JournalEntry] = []
        var startedAt: Int64?, endedAt: Int64?, attempts: Int64 = 0
        var exitCode: Int32?, signal: Int32?, reason: String?, error: String?
        var pgid: Int32?, pgidStart: String?
        var cpuUser: Int64?, cpuSystem: Int64?, memoryPeak: Int64?
    }

    var isEmpty: Bool { held.isEmpty }

    /// Writes an entry, or holds it with its run's row.
    mutating func write(_ entry: JournalEntry, on db: Connection) throws {
        switch entry {
        case let .created(run, transition):
            // A second creation of one id: the first is written, and the second fails as it did.
            if held[run.id] != nil { try flush(run.id, on: db) }
            guard Phase.allows(from: transition.from, to: transition.to) else {
                throw JournalWriter.IllegalTransition(transition: transition)
            }
            held[run.id] = HeldRun(run: run, transitions: [transition])
        case let .transition(transition) where held[transition.runID] != nil:
            try held[transition.runID]!.apply(transition)
        case let .processGroup(runID, pgid, identity) where held[runID] != nil:
            held[runID]!.pgid = pgid
            held[runID]!.pgidStart = identity
        case let .output(runID, _, _) where held[runID] != nil:
            held[runID]!.waiting.append(entry)
        case let .outputChunks(write) where held[write.runID] != nil:
            held[write.runID]!.waiting.append(entry)
        case let .trigger(record):
            if let run = record.runID, held[run] != nil { try flush(run, on: db) }
            try JournalWriter.write(entry, on: db)
        case let .delivery(_, runID, _):
            if held[runID] != nil { try flush(runID, on: db) }
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
        try db.cached("""
            INSERT INTO runs (id, action, key, phase, policy, params, trigger_uid, trigger_gid, trigger_pid, queued_at, via, slot,
                              hook_run, hook_action, hook_event, started_at, ended_at, attempts, exit_code, signal, reason, error,
                              pgid, pgid_start, cpu_user, cpu_system, memory_peak)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """) { try $0.run(run.values) }
        for transition in run.transitions { try JournalWriter.insert(transition, on: db) }
        for entry in run.waiting { try JournalWriter.write(entry, on: db) }
    }
}

extension RunRows.HeldRun {
    /// The row's values in the order of the INSERT in `flush`.
    var values: [DatabaseValue] {
        var values = JournalWriter.creationValues(run)
        values[3] = .text(run.phase.rawValue)
        let int: (Int64?) -> DatabaseValue = { $0.map { .integer($0) } ?? .null }
        let text: (String?) -> DatabaseValue = { $0.map { .text($0) } ?? .null }
        return values + [int(startedAt), int(endedAt), .integer(attempts), int(exitCode.map(Int64.init)), int(signal.map(Int64.init)),
                         text(reason), text(error), int(pgid.map(Int64.init)), text(pgidStart), int(cpuUser), int(cpuSystem), int(memoryPeak)]
    }

    /// What `JournalWriter.apply`'s UPDATE does to the row, done to the held one: the same
    /// checks (a legal change from the phase the row has), the same fields.
    mutating func apply(_ t: Transition) throws {
        guard Phase.allows(from: t.from, to: t.to), t.from == run.phase else { throw JournalWriter.IllegalTransition(transition: t) }
        let d = t.detail
        run.phase = t.to
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
            account(d)
        }
        transitions.append(t)
    }

    /// An attempt's figures added as `JournalWriter.usage`'s columns add them: CPU times add up
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
