import BatonCore
import Foundation

/// One log line (and journal entry with fields) per committed transition, written by a thread of
/// its own: the conductor hands transitions over without waiting for stderr or journald, and
/// the thread is woken only when the queue was empty, so a busy daemon writes them in batches.
final class TransitionLog: @unchecked Sendable {
    /// Guards `queue` and `closed`; the writer waits on it.
    private let condition = NSCondition()
    private var queue: [RunUpdate] = []
    private var closed = false
    private var done = false

    init() {
        let thread = Thread { [self] in loop() }
        thread.name = "baton-log"
        thread.start()
    }

    func append(_ update: RunUpdate) {
        guard update.transition != nil else { return }
        condition.lock()
        queue.append(update)
        if queue.count == 1 { condition.signal() }
        condition.unlock()
    }

    /// Writes what is queued, then stops the thread.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        while !done { condition.wait() }
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            while queue.isEmpty && !closed { condition.wait() }
            let batch = queue
            queue = []
            let finished = closed && batch.isEmpty
            if finished {
                done = true
                condition.broadcast()
            }
            condition.unlock()
            if finished { return }
            for update in batch { Self.write(update) }
        }
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
        var fields = ["BATON_ACTION": run.action, "BATON_RUN": String(run.id), "BATON_PHASE": transition.to.rawValue,
                      "BATON_KEY": run.key]
        if let reason = detail.reason { fields["BATON_REASON"] = reason }
        if let error = detail.error { fields["BATON_ERROR"] = error }
        Log.event(transition.to == .failure ? .warning : .info, line, fields: fields)
    }
}
