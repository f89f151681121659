@testable import baton
import BatonClient
import BatonCore
import Testing

/// How the CLI says that a run waits for a lock: `status`, `show` and the spinner of `baton run`.
@Suite("CLI: waiting for a lock")
struct LockTextTests {
    static let context = Context(socketPath: "/tmp/none.sock", databasePath: nil, isTerminal: false, useColor: false)
    static let start = Timestamp(rawValue: 1_700_000_000_000_000)

    static func run(_ id: Int64, _ action: String, _ phase: Phase, waiting: LockWait? = nil) -> RunSnapshot {
        var run = RunSnapshot(id: id, action: action, key: action, phase: phase, policy: .queue, params: [:], trigger: nil, queuedAt: start,
                              startedAt: phase == .loading ? start : nil)
        run.waiting = waiting
        return run
    }

    static let wait = LockWait(lock: "db", limit: 1, holders: [.init(run: 12, action: "migrate")])

    @Test("status shows each run waiting for a lock, what it waits for and who holds it, and counts the other queued runs")
    func status() {
        let migrate = ActionInfo(name: "migrate", description: nil, exec: ["x"], policy: .reject, policies: [], timeout: nil, params: [:],
                                 keyParams: [], inFlight: [Self.run(12, "migrate", .loading)], last: nil)
        let backup = ActionInfo(name: "backup", description: nil, exec: ["x"], policy: .queue, policies: [], timeout: nil, params: [:],
                                keyParams: [], inFlight: [Self.run(13, "backup", .queued, waiting: Self.wait)], last: nil)
        let text = StatusCommand.text(BatonStatus(actions: [backup, migrate]), context: Self.context, now: Self.start + .seconds(2), width: 200)
        #expect(text.contains("backup   queued (run 13) waiting for lock db, held by migrate run 12"), "\(text)")
        #expect(text.contains("migrate  loading 2.0s (run 12)"), "\(text)")
    }

    @Test("the wait in words: held by whom, behind whom, and a semaphore's count")
    func words() {
        #expect(Self.wait.text == "waiting for lock db, held by migrate run 12")
        let full = LockWait(lock: "heavy-io", limit: 2, holders: [.init(run: 3, action: "scan"), .init(run: 4, action: "backup")])
        #expect(full.text == "waiting for lock heavy-io (2 at once), held by scan run 3, backup run 4")
        let behind = LockWait(lock: "y", limit: 1, holders: [], ahead: [.init(run: 2, action: "both")])
        #expect(behind.text == "waiting for lock y, behind both run 2")
    }

    @Test("the spinner of a queued run says what it waits for; once loading it does not")
    func spinner() {
        #expect(Spinner.line(Self.run(13, "backup", .queued, waiting: Self.wait), frame: 0, now: Self.start)
            == "⠋ backup run 13 queued, waiting for lock db, held by migrate run 12")
        #expect(Spinner.line(Self.run(13, "backup", .loading, waiting: Self.wait), frame: 0, now: Self.start) == "⠋ backup run 13 loading 0µs")
    }

    @Test("show says what a live run waits for, and which locks its start took")
    func show() {
        let detail = RunDetail(run: Self.run(13, "backup", .queued, waiting: Self.wait), transitions: [
            Transition(runID: 13, seq: 1, from: nil, to: .queued, at: Self.start, detail: TransitionDetail()),
        ], triggers: [], output: nil, outputTruncated: false)
        #expect(ShowCommand.story(detail, context: Self.context).contains("\n  waiting for lock db, held by migrate run 12\n"))
        var took = TransitionDetail(attempt: 1)
        took.locks = ["db", "io"]
        #expect(Format.notes(took) == ["attempt 1", "took locks db, io"])
    }
}
