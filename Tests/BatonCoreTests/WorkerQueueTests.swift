@testable import BatonRuntime
@testable import BatonCore
@testable import BatonEngine
import Testing

/// The worker's queue as a table: each scenario is a list of steps with what each must answer,
/// at instants counted in milliseconds from a fixed origin.
@Suite struct WorkerQueueTests {
    enum Expect: Equatable, CustomStringConvertible {
        case run([Int], closing: Bool)
        case wait(untilMS: Int?)
        case exit

        var description: String {
            switch self {
            case let .run(jobs, closing): "run \(jobs)\(closing ? " closing" : "")"
            case let .wait(until): "wait until \(until.map(String.init) ?? "woken")"
            case .exit: "exit"
            }
        }
    }

    enum Step {
        /// Admits a job; `wake` is what the caller must do for the thread, nil for a refusal.
        case admit(Int, bounded: Bool = true, wake: WorkerQueue<Int>.Wake?, refused: WorkerRefusal? = nil)
        case next(atMS: Int, Expect)
        case ran(retrying: [Int], afterMS: Int, atMS: Int)
        case nudge(WorkerQueue<Int>.Wake?)
        case close(WorkerQueue<Int>.Wake)
        case finished(Bool)
        case timedOut(signalled: Bool)
        case abandon([Int])
        case count(Int)
    }

    struct Scenario: CustomTestStringConvertible, Sendable {
        var name: String
        var capacity = 10
        var maxBatch = 10
        var idleTimeoutMS: Int?
        var steps: [Step]
        var testDescription: String { name }
    }

    static let origin = ContinuousClock.now
    static func at(_ ms: Int) -> ContinuousClock.Instant { origin + .milliseconds(ms) }

    static let scenarios: [Scenario] = [
        Scenario(name: "the first job starts the thread; jobs leave in order, in batches of at most maxBatch", maxBatch: 2, steps: [
            .nudge(nil), .admit(1, wake: .start), .nudge(.nothing),
            .next(atMS: 0, .run([1], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 0),
            .next(atMS: 0, .wait(untilMS: nil)),
            .admit(2, wake: .signal), .admit(3, wake: .nothing), .admit(4, wake: .nothing), .admit(5, wake: .nothing),
            .next(atMS: 0, .run([2, 3], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 0),
            .next(atMS: 0, .run([4, 5], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 0),
            .next(atMS: 0, .wait(untilMS: nil)),
        ]),
        Scenario(name: "a bounded submit is refused while capacity jobs wait; an unbounded one is not", capacity: 2, steps: [
            .admit(1, wake: .start), .admit(2, wake: .nothing),
            .admit(3, wake: nil, refused: .full),
            .admit(4, bounded: false, wake: .nothing), .count(3),
            .next(atMS: 0, .run([1, 2, 4], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 0),
            .admit(5, wake: .nothing), .count(1),
        ]),
        Scenario(name: "a held batch waits its delay, then comes back ahead of newer jobs", maxBatch: 3, steps: [
            .admit(1, wake: .start), .admit(2, wake: .nothing),
            .next(atMS: 0, .run([1, 2], closing: false)),
            .admit(3, wake: .nothing), .admit(4, wake: .nothing),
            .ran(retrying: [2], afterMS: 100, atMS: 0),
            .next(atMS: 50, .wait(untilMS: 100)),
            .admit(5, wake: .nothing),
            .nudge(.signal),
            .next(atMS: 60, .wait(untilMS: 100)), .timedOut(signalled: false),
            .next(atMS: 100, .run([2, 3, 4], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 100),
            .next(atMS: 100, .run([5], closing: false)),
        ]),
        Scenario(name: "a held batch counts against the capacity", capacity: 2, maxBatch: 1, steps: [
            .admit(1, wake: .start), .next(atMS: 0, .run([1], closing: false)),
            .admit(2, wake: .nothing), .ran(retrying: [1], afterMS: 10, atMS: 0),
            .count(2), .admit(3, wake: nil, refused: .full),
        ]),
        Scenario(name: "an idle thread is woken once, by the first job", steps: [
            .admit(1, wake: .start), .next(atMS: 0, .run([1], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 0),
            .next(atMS: 0, .wait(untilMS: nil)),
            .admit(2, wake: .signal), .admit(3, wake: .nothing), .nudge(.nothing), .close(.nothing),
        ]),
        Scenario(name: "a retry's wait is cut short by a ping or close, not by a job", steps: [
            .admit(1, wake: .start), .next(atMS: 0, .run([1], closing: false)), .ran(retrying: [1], afterMS: 100, atMS: 0),
            .next(atMS: 0, .wait(untilMS: 100)),
            .admit(2, wake: .nothing), .nudge(.signal),
            .next(atMS: 1, .wait(untilMS: 100)),
            .close(.signal),
        ]),
        Scenario(name: "close drains what is queued, then the thread exits", steps: [
            .admit(1, wake: .start), .admit(2, wake: .nothing), .close(.nothing), .finished(false),
            .admit(3, wake: nil, refused: .closed), .admit(4, bounded: false, wake: nil, refused: .closed),
            .next(atMS: 0, .run([1, 2], closing: true)), .ran(retrying: [], afterMS: 0, atMS: 0),
            .next(atMS: 0, .exit), .finished(true), .nudge(nil),
        ]),
        Scenario(name: "close without a thread is done at once", steps: [
            .close(.nothing), .finished(true), .admit(1, wake: nil, refused: .closed),
        ]),
        Scenario(name: "close cuts one retry wait short, so the handler hears of it; a retry while closing waits again", steps: [
            .admit(1, wake: .start), .next(atMS: 0, .run([1], closing: false)), .ran(retrying: [1], afterMS: 1_000, atMS: 0),
            .next(atMS: 0, .wait(untilMS: 1_000)),
            .close(.signal),
            .next(atMS: 10, .run([1], closing: true)), .ran(retrying: [1], afterMS: 1_000, atMS: 10),
            .next(atMS: 20, .wait(untilMS: 1_010)), .timedOut(signalled: false),
            .next(atMS: 1_010, .run([1], closing: true)), .ran(retrying: [], afterMS: 0, atMS: 1_010),
            .next(atMS: 1_010, .exit),
        ]),
        Scenario(name: "a timed-out wait that was also signalled must take the signal", steps: [
            .admit(1, wake: .start), .next(atMS: 0, .run([1], closing: false)), .ran(retrying: [1], afterMS: 10, atMS: 0),
            .next(atMS: 0, .wait(untilMS: 10)), .timedOut(signalled: false),
            .next(atMS: 5, .wait(untilMS: 10)), .nudge(.signal), .timedOut(signalled: true),
        ]),
        Scenario(name: "abandon takes the held and the queued jobs, in order", maxBatch: 1, steps: [
            .admit(1, wake: .start), .admit(2, wake: .nothing), .admit(3, wake: .nothing),
            .next(atMS: 0, .run([1], closing: false)), .ran(retrying: [1], afterMS: 10, atMS: 0),
            .close(.nothing), .abandon([1, 2, 3]), .count(0),
            .next(atMS: 0, .exit),
        ]),
        Scenario(name: "an idle thread ends after idleTimeout, and the next job starts another", idleTimeoutMS: 100, steps: [
            .admit(1, wake: .start), .next(atMS: 0, .run([1], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 0),
            .next(atMS: 10, .wait(untilMS: 110)), .timedOut(signalled: false),
            .next(atMS: 110, .exit), .finished(false), .nudge(nil),
            .admit(2, wake: .start), .next(atMS: 200, .run([2], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 200),
            .next(atMS: 250, .wait(untilMS: 350)),
        ]),
        Scenario(name: "work resets the idle clock; a held retry is not idle", idleTimeoutMS: 100, steps: [
            .admit(1, wake: .start), .next(atMS: 0, .run([1], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 0),
            .next(atMS: 0, .wait(untilMS: 100)), .admit(2, wake: .signal),
            .next(atMS: 90, .run([2], closing: false)), .ran(retrying: [2], afterMS: 500, atMS: 90),
            .next(atMS: 200, .wait(untilMS: 590)), .timedOut(signalled: false),
            .next(atMS: 590, .run([2], closing: false)), .ran(retrying: [], afterMS: 0, atMS: 590),
            .next(atMS: 600, .wait(untilMS: 700)),
        ]),
    ]

    @Test(arguments: scenarios)
    func scenario(_ scenario: Scenario) {
        var queue = WorkerQueue<Int>(capacity: scenario.capacity, maxBatch: scenario.maxBatch,
                                     idleTimeout: scenario.idleTimeoutMS.map { .milliseconds($0) })
        for (index, step) in scenario.steps.enumerated() {
            let place = Comment(rawValue: "step \(index)")
            switch step {
            case let .admit(job, bounded, wake, refused):
                do throws(WorkerRefusal) {
                    let found = try queue.admit(job, bounded: bounded)
                    #expect(refused == nil, place)
                    #expect(found == wake, place)
                } catch {
                    #expect(error == refused, place)
                }
            case let .next(ms, expected):
                let found: Expect = switch queue.next(at: Self.at(ms)) {
                case let .run(jobs, closing): .run(jobs, closing: closing)
                case let .wait(until): .wait(untilMS: until.map { Int(($0 - Self.origin) / .milliseconds(1)) })
                case .exit: .exit
                }
                #expect(found == expected, place)
            case let .ran(retrying, after, ms):
                queue.ran(retrying: retrying, after: .milliseconds(after), at: Self.at(ms))
            case let .nudge(wake):
                #expect(queue.nudge() == wake, place)
            case let .close(wake):
                #expect(queue.close() == wake, place)
            case let .finished(finished):
                #expect(queue.finished == finished, place)
            case let .timedOut(signalled):
                #expect(queue.timedOut() == signalled, place)
            case let .abandon(jobs):
                #expect(queue.abandon() == jobs, place)
            case let .count(count):
                #expect(queue.count == count, place)
            }
        }
    }
}
