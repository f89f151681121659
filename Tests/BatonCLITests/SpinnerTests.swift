import BatonCore
import Dispatch
@testable import baton
import Testing

@Suite("baton run's loading line", .offPool)
struct SpinnerTests {
    let start = Timestamp(microseconds: 1_000_000_000)

    func run(progress: Progress? = nil, estimate: Int64? = nil, phase: Phase = .loading) -> RunSnapshot {
        RunSnapshot(id: 7, action: "build", key: "build", phase: phase, policy: .join, params: [:], trigger: nil,
                    queuedAt: start, startedAt: phase == .queued ? nil : start, attempts: 1, progress: progress, estimate: estimate)
    }

    @Test("reported progress shows as a bar with its message")
    func reported() {
        let line = Spinner.line(run(progress: Progress(fraction: 0.5, message: "copying")), frame: 0,
                                now: Timestamp(microseconds: start.rawValue + 2_000_000))
        #expect(line == "⠋ build run 7 loading 2.0s [██████████··········] 50% copying")
    }

    @Test("without progress, an estimate from recent runs shows as a marked, never-finished bar")
    func estimated() {
        let halfway = Spinner.line(run(estimate: 4_000_000), frame: 1, now: Timestamp(microseconds: start.rawValue + 1_000_000))
        #expect(halfway == "⠙ build run 7 loading 1.0s [█████···············] ~25% (estimate: usually 4.0s)")
        let late = Spinner.line(run(estimate: 4_000_000), frame: 2, now: Timestamp(microseconds: start.rawValue + 9_000_000))
        #expect(late.contains("~99% (estimate: usually 4.0s)"))
    }

    @Test("no progress and no estimate: just the phase and the time; queued runs show no estimate")
    func plain() {
        #expect(Spinner.line(run(), frame: 0, now: Timestamp(microseconds: start.rawValue + 500_000)) == "⠋ build run 7 loading 500ms")
        #expect(Spinner.line(run(estimate: 1_000_000, phase: .queued), frame: 0, now: start) == "⠋ build run 7 queued")
    }

    @Test("clear returns once the line is cleared, after the frame shown; nothing is drawn after it, and a later clear clears again")
    func clearAfterShow() {
        let written = Locked<[String]>([])
        let spinner = Spinner { text in written.withLock { $0.append(text) } }
        spinner.show(run())
        spinner.clear()
        let atClear = written.withLock { $0 }
        #expect(atClear.last == Spinner.clearLine)
        #expect(atClear.first?.hasPrefix(Spinner.clearLine + "⠙ build run 7 loading") == true)
        spinner.show(run(phase: .queued))
        spinner.clear()
        #expect(written.withLock { $0 } == atClear + [Spinner.clearLine])
    }

    @Test("a spinner freed without a clear clears the line and stops drawing")
    func freedWithoutClear() {
        let cleared = DispatchSemaphore(value: 0)
        do {
            let spinner = Spinner { text in if text == Spinner.clearLine { cleared.signal() } }
            spinner.show(run())
        }
        #expect(cleared.wait(timeout: .usualWait) == .success)
    }
}
