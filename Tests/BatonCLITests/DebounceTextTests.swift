@testable import baton
import BatonClient
import BatonCore
import Testing

/// How the CLI says that a run is debouncing: `status`, `show` and the spinner of `baton run`.
@Suite("CLI: debouncing")
struct DebounceTextTests {
    static let context = Context(socketPath: "/tmp/none.sock", databasePath: nil, isTerminal: false, useColor: false)
    static let start = Timestamp(rawValue: 1_700_000_000_000_000)

    static func pending(until: Timestamp?) -> RunSnapshot {
        var run = RunSnapshot(id: 5, action: "ci", key: "ci", phase: .queued, policy: .queue, params: [:], trigger: nil, queuedAt: start)
        run.debounceUntil = until
        return run
    }

    @Test("status says when a pending run starts, in tenths under a minute, and counts the other queued runs apart")
    func status() {
        let other = RunSnapshot(id: 6, action: "ci", key: "ci k=2", phase: .queued, policy: .queue, params: [:], trigger: nil, queuedAt: Self.start)
        let ci = ActionInfo(name: "ci", description: nil, exec: ["x"], policy: .queue, policies: [], timeout: nil, params: [:], keyParams: [],
                            inFlight: [Self.pending(until: Self.start + .milliseconds(3_250)), other], last: nil)
        let text = StatusCommand.text(BatonStatus(actions: [ci]), context: Self.context, now: Self.start, width: 200)
        #expect(text.contains("ci      debouncing, starts in 3.2s (run 5); 1 queued"), "\(text)")
    }

    @Test("the words: tenths under a minute, a duration beyond, nothing once the window is over or the run is not queued")
    func words() {
        #expect(Format.debouncing(Self.pending(until: Self.start + .milliseconds(3_250)), now: Self.start) == "debouncing, starts in 3.2s")
        #expect(Format.debouncing(Self.pending(until: Self.start + .seconds(90)), now: Self.start) == "debouncing, starts in 1m30s")
        #expect(Format.debouncing(Self.pending(until: Self.start), now: Self.start + .seconds(1)) == "debouncing, starts in 0.0s")
        #expect(Format.debouncing(Self.pending(until: nil), now: Self.start) == nil)
        var loading = Self.pending(until: Self.start + .seconds(1))
        loading.phase = .loading
        #expect(Format.debouncing(loading, now: Self.start) == nil)
    }

    @Test("the spinner of a pending run says when it starts; show says it, and the deadline its creation recorded")
    func spinnerAndShow() {
        #expect(Spinner.line(Self.pending(until: Self.start + .seconds(2)), frame: 0, now: Self.start)
            == "⠋ ci run 5 queued, debouncing, starts in 2.0s")
        let detail = RunDetail(run: Self.pending(until: .now + .seconds(30)), transitions: [
            Transition(runID: 5, seq: 1, from: nil, to: .queued, at: Self.start, detail: TransitionDetail()),
        ], triggers: [], output: nil, outputTruncated: false)
        #expect(ShowCommand.story(detail, context: Self.context).contains("\n  debouncing, starts in "))
        var created = TransitionDetail()
        created.debounce = (Self.start + .seconds(5)).rawValue
        #expect(Format.notes(created) == ["debounce until \(Format.time(Self.start + .seconds(5)))"])
    }
}
