import BatonCore
import FoundationEssentials

/// One log line (and journal entry with fields) per committed transition, written by a worker
/// of its own: the conductor hands transitions over without waiting for stderr or journald, and
/// the worker writes whatever has gathered meanwhile in one go. The transitions published in one
/// turn of the conductor's loop go to the worker together at the turn's end, one job (a job per
/// transition was a lock and a queue entry each, 5 % of the loop's instructions, issue 39).
/// At most `capacity` lines wait (stderr blocked for that long), however they fall into turns (a
/// fleet tick's rows land in one): lines past it are dropped and counted, then reported in one line.
/// The journal sink hears of each line logged, so that a run's output follows its `loading` line.
final class TransitionLog: Sendable {
    private let worker: SerialWorker<[RunUpdate]>
    /// Lines handed over and not yet written: added on the loop, taken off by the worker once
    /// written. Only the loop adds, so the room it reads can only grow before it adds.
    private let pending = Counter()
    private let capacity: Int
    /// Lines dropped since the worker last said so.
    let dropped = Counter()
    /// The transitions of this turn of the loop, not yet handed to the worker.
    private let gathered: LoopOwned<[RunUpdate]>

    /// A log of at most `capacity` lines waiting, each written to the log and told to `sink`
    /// (`write(_:sink:)`), or given to `write` instead (a test's).
    init(reactor: Reactor, capacity: Int = 100_000, sink: JournalSink? = nil, write: (@Sendable (RunUpdate) -> Void)? = nil) {
        gathered = LoopOwned([], on: reactor)
        self.capacity = capacity
        worker = SerialWorker(name: "baton-log", capacity: capacity, maxBatch: 64, idleTimeout: .seconds(10), state: ()) {
            [dropped, pending] _, batch in
            for updates in batch.jobs {
                for update in updates { if let write { write(update) } else { Self.write(update, sink: sink) } }
                pending.add(-updates.count)
            }
            Self.report(dropped)
        }
    }

    /// Says how many lines were dropped since it last said so, if any.
    static func report(_ dropped: Counter) {
        let lost = dropped.take()
        if lost > 0 { Log.warning("\(lost) transition log lines were dropped: the log could not keep up") }
    }

    /// Logs a transition (on the conductor's loop, as its observers are called): handed to the
    /// worker with the rest of the turn's at the turn's end. (An update without a transition is
    /// passed over by `write`, on the worker: checked here, the check copied the transition.)
    func append(_ update: RunUpdate) {
        let first = gathered.access { gathered -> Bool in
            if gathered.isEmpty { gathered.reserveCapacity(4) }
            gathered.append(update)
            return gathered.count == 1
        }
        if first { gathered.reactor.atTurnEnd { [self] in handOver() } }
    }

    /// Hands the turn's lines to the worker, as many as there is room for; the rest are dropped.
    private func handOver() {
        // Taken whole, not copied and emptied in place (which made a new buffer as large).
        var updates = gathered.access { gathered -> [RunUpdate] in
            defer { gathered = [] }
            return gathered
        }
        let room = max(capacity - pending.current, 0)
        if updates.count > room {
            dropped.add(updates.count - room)
            updates.removeLast(updates.count - room)
        }
        guard !updates.isEmpty else { return }
        pending.add(updates.count)
        do throws(WorkerRefusal) {
            // Bounded by `pending`, in lines: the queue's own bound counts jobs.
            try worker.submit(updates, bounded: false)
        } catch {
            pending.add(-updates.count)
            dropped.add(updates.count)
        }
    }

    /// Hands over the turn's transitions (on the loop, which runs until batond exits), writes
    /// what is queued, then stops the worker.
    func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            gathered.reactor.onLoop { [self] in
                handOver()
                done.resume()
            }
        }
        worker.close(timeout: .seconds(30))
        Self.report(dropped)   // the last turns' drops, when no batch came after them to say so
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
