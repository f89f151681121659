@testable import baton
import BatonClient
import BatonCore
import Testing

/// A `BatonClient` error as the CLI ends with it: batond's message as it came, and the exit code
/// `baton --help` documents for it.
@Suite("Failure: each BatonClient error's message and exit code")
struct FailureTests {
    static let run = RunSnapshot(id: 3, action: "deploy", key: "deploy", phase: .failure, policy: .reject, params: [:],
                                 trigger: nil, queuedAt: Timestamp(rawValue: 1))

    static let cases: [(BatonClientError, Int32, String)] = [
        (.busy(run: 42, since: nil, message: "deploy is busy"), 75, "deploy is busy"),
        (.shuttingDown("batond is shutting down"), 75, "batond is shutting down"),
        (.storeUnavailable("disk full"), 75, "disk full"),
        (.forbidden("you may not trigger deploy"), 77, "you may not trigger deploy"),
        (.internal("a bug"), 70, "a bug"),
        (.badParam(name: "env", reason: "param env: \"dev\" does not match ^prod$"), 2, "param env: \"dev\" does not match ^prod$"),
        (.badRequest("action deploy does not allow policy replace"), 2, "action deploy does not allow policy replace"),
        (.unknownAction("unknown action nope"), 2, "unknown action nope"),
        (.unknownRun("no run 9"), 2, "no run 9"),
        (.unavailable("lost batond at /tmp/b.sock: Connection reset by peer"), 69, "lost batond at /tmp/b.sock: Connection reset by peer"),
        (.failed(RunOutcome(run: run, decision: .created, shared: false)), 1, "run 3 of deploy failed"),
    ]

    @Test("the failure keeps the message and the refusal, with the exit code of its case", arguments: cases)
    func mapped(error: BatonClientError, code: Int32, message: String) {
        let failure = Failure(error)
        #expect(failure.code == code)
        #expect(failure.message == message)
        #expect(failure.refusal == error)
        #expect(errorText(failure) == ("Error: \(message)\n", code))
    }

    @Test("a message of several lines (a refused reload's problems) shows one line each, not an escaped \\n; a control character in a line is still made visible")
    func severalLines() {
        let message = "c.json5: actions.a.timeoutt: unknown field\nc.json5: actions.a.policy: expected one of reject, got \"\u{1B}[2J\""
        let (text, code) = errorText(Failure(code: 2, message: message))
        #expect(code == 2)
        #expect(text == "Error: c.json5: actions.a.timeoutt: unknown field\n  c.json5: actions.a.policy: expected one of reject, got \"\\e[2J\"\n",
                "\(text.debugDescription)")
    }
}
