import BatonCore
import Dispatch
import FoundationEssentials

/// The loading state on stderr: a spinner, the phase, the elapsed time and the progress, redrawn
/// ten times a second so that time and an estimated progress move between updates.
///
/// A thread of its own owns what is drawn (the run and the frame, plain values of its loop) and
/// does all the drawing: the caller's updates reach it as messages, so only the mailbox is shared.
final class Spinner: Sendable {
    private enum Message: Sendable {
        case show(RunSnapshot)
        /// Clear the line and stop drawing; `done` is signalled once the line is cleared.
        case clear(done: DispatchSemaphore)
        /// The spinner was freed: clear the line and stop drawing, unless a clear did already.
        case freed
    }

    private struct Mailbox {
        var messages: [Message] = []
        /// The thread has cleared the line and ended: a later clear clears it again itself.
        var ended = false
    }

    private let mailbox = Locked(Mailbox())
    /// Signalled once per message posted.
    private let posted = DispatchSemaphore(value: 0)
    private let write: @Sendable (String) -> Void
    static let clearLine = "\r\u{1B}[2K"

    /// Starts drawing, with `write` (to stderr; a test's own).
    init(write: @escaping @Sendable (String) -> Void = { Stdio.error.write(Data($0.utf8)) }) {
        self.write = write
        SystemThread.start { [mailbox, posted] in Self.draw(mailbox, posted, write) }
    }

    /// A spinner freed without a clear stops its thread (it holds no reference to the spinner, and
    /// would draw on until the process ends).
    deinit {
        _ = post(.freed)
    }

    /// Draws `run` now, and from now on at each frame.
    func show(_ run: RunSnapshot) {
        _ = post(.show(run))
    }

    /// Stops drawing and clears the line; returns once it is cleared.
    func clear() {
        let done = DispatchSemaphore(value: 0)
        if post(.clear(done: done)) { done.wait() } else { write(Self.clearLine) }
    }

    /// Hands `message` to the thread; false once it has ended.
    private func post(_ message: Message) -> Bool {
        let open = mailbox.withLock { mailbox in
            if !mailbox.ended { mailbox.messages.append(message) }
            return !mailbox.ended
        }
        if open { posted.signal() }
        return open
    }

    /// The thread: draws at each `show` and every 100 ms, until a `clear` (or the spinner is freed);
    /// then ends, answering the messages still posted (a clear clears the line again, a show is too late).
    private static func draw(_ mailbox: Locked<Mailbox>, _ posted: DispatchSemaphore, _ write: (String) -> Void) {
        var run: RunSnapshot?, frame = 0, cleared = false
        var tick = DispatchTime.now() + .milliseconds(100)
        func answer(_ messages: [Message]) {
            for message in messages {
                switch message {
                case let .show(shown) where !cleared:
                    run = shown
                    frame += 1
                    write(clearLine + framed(shown, frame))
                case .show: break
                case let .clear(done):
                    cleared = true
                    write(clearLine)
                    done.signal()
                case .freed where !cleared:
                    cleared = true
                    write(clearLine)
                case .freed: break
                }
            }
        }
        while !cleared {
            let woken = posted.wait(timeout: tick) == .success
            answer(mailbox.withLock { mailbox in
                defer { mailbox.messages = [] }
                return mailbox.messages
            })
            guard !woken, !cleared else { continue }
            if let run {
                frame += 1
                write(clearLine + framed(run, frame))
            }
            tick = .now() + .milliseconds(100)
        }
        answer(mailbox.withLock { mailbox in
            defer { mailbox.messages = [] }
            mailbox.ended = true
            return mailbox.messages
        })
    }

    /// One frame, cut to the terminal's width: a line that wraps would leave a line behind at each redraw.
    private static func framed(_ run: RunSnapshot, _ frame: Int) -> String {
        Format.fit(line(run, frame: frame), Format.width(of: 2) - 1).trimmingTrailingSpaces()
    }
}

extension Spinner {
    static let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

    /// One frame of the loading state. Reported progress shows as a bar; without it, a run with an
    /// estimate (the median of recent successful runs) shows an estimated bar, marked as such,
    /// that never claims to be done.
    static func line(_ run: RunSnapshot, frame: Int, now: Timestamp = .now) -> String {
        let run = run.forTerminal
        var line = "\(frames[frame % frames.count]) \(run.action) run \(run.id) \(run.phase.rawValue)"
        if run.startedAt != nil { line += " \(Format.duration(run, now: now))" }
        if run.phase == .queued, let waiting = run.waiting { line += ", " + waiting.text }
        if let debouncing = Format.debouncing(run, now: now) { line += ", " + debouncing }
        if let needing = Format.needing(run) { line += ", " + needing }
        if let approving = Format.approving(run) { line += ", " + approving }
        if let progress = run.progress {
            if let fraction = progress.fraction { line += " " + bar(fraction) + " \(Int(fraction * 100))%" }
            if let message = progress.message { line += " \(message)" }
        } else if let estimate = run.estimate, estimate > 0, let started = run.startedAt, run.phase == .loading {
            let fraction = min(Double(now.rawValue - started.rawValue) / Double(estimate), 0.99)
            line += " " + bar(fraction) + " ~\(Int(fraction * 100))% (estimate: usually \(DurationText.format(.microseconds(estimate))))"
        }
        return line
    }

    static func bar(_ fraction: Double) -> String {
        let filled = Int(min(max(fraction, 0), 1) * 20)
        return "[" + String(repeating: "█", count: filled) + String(repeating: "·", count: 20 - filled) + "]"
    }
}
