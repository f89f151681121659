import BatonCore
import FoundationEssentials

/// One log line (and journal entry with fields) per committed transition, written by a worker
/// of its own: the conductor hands transitions over without waiting for stderr or journald, and
/// the worker writes whatever has gathered meanwhile in one go. Lines that find `capacity`
/// waiting (stderr blocked for that long) are dropped and counted, then reported in one line.
/// The journal sink hears of each line logged, so that a run's output follows its `loading` line.
final class TransitionLog: Sendable {
    private let worker: SerialWorker<RunUpdate>
    private let dropped = Counter()

    init(capacity: Int = 100_000, sink: JournalSink? = nil) {
        worker = SerialWorker(name: "baton-log", capacity: capacity, maxBatch: 1_024, idleTimeout: .seconds(10), state: ()) {
            [dropped] _, batch in
            for update in batch.jobs { Self.write(update, sink: sink) }
            let lost = dropped.take()
            if lost > 0 { Log.warning("\(lost) transition log lines were dropped: the log could not keep up") }
        }
    }

    func append(_ update: RunUpdate) {
        guard update.transition != nil else { return }
        do throws(WorkerRefusal) {
            try worker.submit(update)
        } catch {
            dropped.add()
        }
    }

    /// Writes what is queued, then stops the worker.
    func close() {
        worker.close(timeout: .seconds(30))
    }

    /// What happened to which run, and why; the sink's held lines of the run go after a
    /// `loading` line and before a terminal one.
    static func write(_ update: RunUpdate, sink: JournalSink?) {
        guard let transition = update.transition else { return }
        if transition.to.isTerminal { sink?.logged(run: update.run.id, phase: transition.to, attempt: transition.detail.attempt) }
        write(update)
        if !transition.to.isTerminal { sink?.logged(run: update.run.id, phase: transition.to, attempt: transition.detail.attempt) }
    }

    /// What happened to which run, and why.
    static func write(_ update: RunUpdate) {
        guard let transition = update.transition else { return }
        let run = update.run
        var line = "run \(run.id) \(run.key): \(transition.from?.rawValue ?? "new") → \(transition.to.rawValue)"
        let detail = transition.detail
        var notes: [String] = []
        if let attempt = detail.attempt, transition.to == .loading { notes.append("attempt \(attempt)") }
        if transition.from == nil, let peer = run.trigger { notes.append("by uid \(peer.uid) pid \(peer.pid)") }
        if let reason = detail.reason, transition.to.isTerminal || transition.to == .queued { notes.append(reason) }
        if let error = detail.error { notes.append(error) }
        if let by = detail.by { notes.append("by uid \(by)") }
        if let leftovers = detail.leftovers { notes.append("\(leftovers) leftover process\(leftovers == 1 ? "" : "es") stopped") }
        if !notes.isEmpty { line += " (" + notes.joined(separator: ", ") + ")" }
        Log.event(transition.to == .failure ? .warning : .info, line, fields: journalFields(update))
    }

    /// The structured fields of a transition's journal entry (only made when the log is the journal):
    /// `BATON_RUN_ID` as on the run's output lines, and `BATON_RUN`, its old name, through release 0.2 (gone in 0.3).
    static func journalFields(_ update: RunUpdate) -> [String: String] {
        let run = update.run
        var fields = ["BATON_ACTION": run.action, "BATON_RUN_ID": String(run.id), "BATON_RUN": String(run.id), "BATON_KEY": run.key]
        if let transition = update.transition {
            fields["BATON_PHASE"] = transition.to.rawValue
            if let reason = transition.detail.reason { fields["BATON_REASON"] = reason }
            if let error = transition.detail.error { fields["BATON_ERROR"] = error }
        }
        return fields
    }
}
