import BatonCore
import FoundationEssentials

/// How each journal entry becomes rows: one function per entry kind, on the writer's connection.
enum JournalWriter {
    /// A phase change the table in `Phase.allows` forbids, or one that does not follow the run's row.
    struct IllegalTransition: Error, CustomStringConvertible {
        var transition: Transition
        var description: String {
            "run \(transition.runID): \(transition.from?.rawValue ?? "nothing") → \(transition.to.rawValue) is not a legal transition here"
        }
    }

    /// A hook firing left to the store: one machine's conductor decides its hooks itself
    /// (`ConductorState.storeDecidesHooks` is for the fleet), so one here is a wiring mistake,
    /// refused rather than dropped (it would lose the notification).
    struct UndecidedHooks: Error, CustomStringConvertible {
        var run: Int64
        var description: String { "run \(run)'s hooks were left to the store, which decides none on one machine" }
    }

    /// Failures left to the store to count: one machine's conductor counts them itself
    /// (`ConductorState.storeCountsFailures` is for the fleet); refused as a wiring mistake.
    struct UncountedFailures: Error, CustomStringConvertible {
        var run: Int64
        var description: String { "run \(run)'s failure was left to the store to count, which counts none on one machine" }
    }

    static func write(_ entry: JournalEntry, on db: Connection) throws {
        switch entry {
        case let .hooks(firing):
            throw UndecidedHooks(run: firing.run.id)
        case let .failureStreak(run, _, _):
            throw UncountedFailures(run: run)
        case let .created(run, transition):
            try db.cached("""
                INSERT INTO runs (id, action, key, phase, policy, params, trigger_uid, trigger_gid, trigger_pid, queued_at, via, slot,
                                  hook_run, hook_action, hook_event)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """) {
                let t = run.trigger, hook = run.hook
                try $0.execute(run.id, run.action, run.key, run.phase.rawValue, run.policy.rawValue, JSONText.object(run.params),
                               t.map { Int64($0.uid) }, t.map { Int64($0.gid) }, t.map { Int64($0.pid) }, run.queuedAt.rawValue, run.via,
                               run.slot?.rawValue, hook?.run, hook?.action, hook?.event.rawValue)
            }
            try insert(transition, on: db)
        case let .transition(transition):
            try apply(transition, on: db)
        case let .trigger(record):
            let run: DatabaseValue = record.runID.map { .integer($0) } ?? .null
            let peer: [DatabaseValue] = record.peer.map { [.integer(Int64($0.uid)), .integer(Int64($0.gid)), .integer(Int64($0.pid))] }
                ?? [.null, .null, .null]
            let values: [DatabaseValue] = [run, .text(record.action), .text(record.key), .text(record.decision.description),
                                           .text(record.policy.rawValue)] + peer
                + [.integer(record.at.rawValue), .text(JSONText.object(record.params)), record.via.map { .text($0) } ?? .null]
            try db.cached("""
                INSERT INTO triggers (run_id, action, key, decision, policy, uid, gid, pid, at, params, via)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """) { try $0.run(values) }
        case let .output(runID, tail, truncated):
            try db.cached("INSERT OR REPLACE INTO outputs (run_id, tail, truncated) VALUES (?, ?, ?)") {
                try $0.execute(runID, tail, Int64(truncated ? 1 : 0))
            }
        case let .outputChunks(write):
            try OutputWriter.write(write, on: db)
        case let .processGroup(runID, pgid, identity):
            try db.cached("UPDATE runs SET pgid = ?, pgid_start = ? WHERE id = ?") {
                try $0.execute(pgid, identity, runID)
            }
        case let .pause(pause):
            let until: DatabaseValue = pause.until.map { .integer($0.rawValue) } ?? .null
            try db.cached("INSERT OR REPLACE INTO pauses (action, paused_by, reason, at, until, hold) VALUES (?, ?, ?, ?, ?, ?)") {
                try $0.run([.text(pause.action), .text(pause.by), .text(pause.reason), .integer(pause.at.rawValue), until,
                            .integer(pause.hold ? 1 : 0)])
            }
            try db.cached("INSERT INTO pause_events (action, event, by_whom, reason, at, until, hold) VALUES (?, 'paused', ?, ?, ?, ?, ?)") {
                try $0.run([.text(pause.action), .text(pause.by), .text(pause.reason), .integer(pause.at.rawValue), until,
                            .integer(pause.hold ? 1 : 0)])
            }
        case let .resume(action, by, at):
            try db.cached("DELETE FROM pauses WHERE action = ?") { try $0.run([.text(action)]) }
            try db.cached("INSERT INTO pause_events (action, event, by_whom, at) VALUES (?, 'resumed', ?, ?)") {
                try $0.run([.text(action), .text(by), .integer(at.rawValue)])
            }
        case let .needs(runID, needed):
            for (position, need) in needed.enumerated() {
                try db.cached("INSERT OR REPLACE INTO run_needs (run_id, position, action, needed_run_id) VALUES (?, ?, ?, ?)") {
                    try $0.run([.integer(runID), .integer(Int64(position)), .text(need.action), .integer(need.run)])
                }
            }
        case let .stopAsked(runID, stop):
            // Only while the run is unfinished: a stop asked just before its end changes nothing.
            try db.cached("UPDATE runs SET stop = ? WHERE id = ? AND phase IN ('loading', 'retrying')") {
                try $0.run([.text(stop.recordText), .integer(runID)])
            }
        case let .origin(runID, uid):
            try db.cached("UPDATE runs SET origin_uid = ? WHERE id = ?") { try $0.run([.integer(Int64(uid)), .integer(runID)]) }
        case let .approval(runID, state):
            let text = { (value: String?) -> DatabaseValue in value.map { .text($0) } ?? .null }
            let time = { (value: Timestamp?) -> DatabaseValue in value.map { .integer($0.rawValue) } ?? .null }
            try db.cached("""
                INSERT OR REPLACE INTO approvals (run_id, approvers, until, verdict, decided_by, decided_at, reason)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """) {
                try $0.run([.integer(runID), .text(state.by.joined(separator: "\n")), time(state.until), text(state.verdict?.rawValue),
                            text(state.decidedBy), time(state.decidedAt), text(state.reason)])
            }
        case let .delivery(delivery, runID, at):
            // One host decides a delivery once (the listener's table, then this history), so a
            // record already there is that first decision's: it stays.
            try db.cached("""
                INSERT INTO webhook_deliveries (hook, delivery, run_id, address, at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (hook, delivery) DO NOTHING
                """) {
                try $0.run([.text(delivery.hook), .text(delivery.id), .integer(runID), delivery.address.map { .text($0) } ?? .null,
                            .integer(at.rawValue)])
            }
        }
    }

    static func insert(_ t: Transition, on db: Connection) throws {
        guard Phase.allows(from: t.from, to: t.to) else { throw IllegalTransition(transition: t) }
        try db.cached("INSERT INTO transitions (run_id, seq, from_phase, to_phase, at, detail) VALUES (?, ?, ?, ?, ?, ?)") {
            try $0.execute(t.runID, t.seq, t.from?.rawValue, t.to.rawValue, t.at.rawValue, DatabaseText(utf8: JSONText.detailUTF8(t.detail)))
        }
    }

    /// Inserts the transition and moves the run's row to the new phase, with its outcome fields.
    private static func apply(_ t: Transition, on db: Connection) throws {
        try insert(t, on: db)
        let from = t.from?.rawValue
        let d = t.detail
        switch t.to {
        case .queued:
            try db.cached("UPDATE runs SET phase = 'queued', pgid = NULL WHERE id = ? AND phase = ?") {
                try $0.execute(t.runID, from)
            }
        case .loading:
            try db.cached("""
                UPDATE runs SET phase = 'loading', started_at = coalesce(started_at, ?), attempts = ?, pgid = NULL
                WHERE id = ? AND phase = ?
                """) {
                try $0.execute(t.at.rawValue, Int64(d.attempt ?? 1), t.runID, from)
            }
        case .retrying:
            // An attempt ends here too: its figures are added to the run's (each bound twice: the sum, or the figure alone).
            try db.cached("""
                UPDATE runs SET phase = 'retrying', exit_code = ?, signal = ?, error = ?,
                    cpu_user = coalesce(cpu_user + ?, cpu_user, ?), cpu_system = coalesce(cpu_system + ?, cpu_system, ?),
                    memory_peak = max(coalesce(memory_peak, ?), coalesce(?, memory_peak))
                WHERE id = ? AND phase = ?
                """) {
                try $0.execute(d.exitCode, d.signal, d.error, d.cpuUser, d.cpuUser, d.cpuSystem, d.cpuSystem, d.memoryPeak, d.memoryPeak,
                               t.runID, from)
            }
        case .success, .failure, .cancelled:
            try db.cached("""
                UPDATE runs SET phase = ?, ended_at = ?, exit_code = coalesce(?, exit_code), signal = coalesce(?, signal),
                    reason = ?, error = ?, pgid = NULL, progress = NULL,
                    cpu_user = coalesce(cpu_user + ?, cpu_user, ?), cpu_system = coalesce(cpu_system + ?, cpu_system, ?),
                    memory_peak = max(coalesce(memory_peak, ?), coalesce(?, memory_peak))
                WHERE id = ? AND phase = ?
                """) {
                try $0.execute(t.to.rawValue, t.at.rawValue, d.exitCode, d.signal, d.reason, t.to == .success ? nil : d.error,
                               d.cpuUser, d.cpuUser, d.cpuSystem, d.cpuSystem, d.memoryPeak, d.memoryPeak, t.runID, from)
            }
        }
        guard db.changes == 1 else { throw IllegalTransition(transition: t) }
    }
}
