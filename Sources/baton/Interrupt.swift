import BatonCore
import CBatonSystem
import Dispatch
import FoundationEssentials
import Glibc

/// Ctrl-C while `baton run` waits. The run goes on in batond (a caller that leaves never cancels
/// it: others may share it), so baton says which run it is and how to wait for or cancel it, then
/// ends as interrupted: by SIGINT itself, as a shell expects of a child it sent one (status 130,
/// and a script's loop stops too). The handler only writes a byte to a pipe (async-signal-safe,
/// in C: `baton_signal_pipe`); a thread of its own reads it and does the rest.
final class Interrupt: Sendable {
    /// The run followed, once batond has named it.
    private let run = Locked<RunSnapshot?>(nil)
    /// Signalled when batond first names the run.
    private let named = DispatchSemaphore(value: 0)

    /// How long Ctrl-C waits for batond to name the run, when it has not yet: the trigger is sent
    /// and its `queued` answer is on its way, and the id is what the user needs.
    static let namingWait = 2.0

    /// Takes SIGINT from now on, for a trigger of `action`; the spinner, if any, is cleared first.
    /// A SIGINT ignored already (a background job of a script, `nohup`) stays ignored.
    init(action: String, spinner: Spinner?) {
        var current = sigaction()
        // SIG_IGN is the handler 1 (a function pointer, so compared as a number).
        guard sigaction(SIGINT, nil, &current) == 0, unsafeBitCast(current.__sigaction_handler.sa_handler, to: Int.self) != 1 else { return }
        var signals = [SIGINT]
        let fd = baton_signal_pipe(&signals, 1)
        guard fd >= 0 else { return }   // no pipe: Ctrl-C ends baton silently, as before
        SystemThread.start { [self] in
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&pfd, 1, -1) < 0 && errno == EINTR {}
            let known = named.wait(timeout: .now() + Self.namingWait) == .success
            let line = Self.message(action: action, run: known ? run.withLock { $0 } : nil)
            // The terminal has echoed ^C: after the spinner's line (cleared) or below it, never over output.
            if let spinner { spinner.clear() } else if isatty(2) == 1 { Stdio.error.write(Data("\n".utf8)) }
            Stdio.error.write(Data((line + "\n").utf8))
            fflush(nil)   // every stream: output already printed (--follow) is not lost
            Glibc.signal(SIGINT, SIG_DFL)
            raise(SIGINT)
        }
    }

    /// The run being followed, as batond last showed it.
    func following(_ snapshot: RunSnapshot) {
        let first = run.withLock { run in
            defer { run = snapshot }
            return run == nil
        }
        if first { named.signal() }
    }

    /// What Ctrl-C says: `^C: run 12 goes on; baton wait 12 or baton cancel 12`, or, when batond
    /// has not named the run, where to look for it.
    static func message(action: String, run: RunSnapshot?) -> String {
        guard let run else {
            return "^C: stopped waiting before batond named the run; it may be queued: baton status \(Terminal.visible(action))"
        }
        if run.phase.isTerminal { return "^C: run \(run.id) had ended (\(run.phase.rawValue)): baton show \(run.id)" }
        return "^C: run \(run.id) goes on; baton wait \(run.id) or baton cancel \(run.id)"
    }
}
