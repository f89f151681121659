@testable import BatonCore
import Foundation
import Synchronization
import Testing

/// A stop's followers are ended after its `settle` (where batond's servers end each connection
/// with `{"restarting":true}`), never before: a follower that comes between the drain and the
/// settle, or after a second signal drained the runs before `shutdown` began, is not told
/// "nothing more comes" (which a client reads as "batond stopped") before the settle.
@Suite("Conductor: followers end after the stop's settle", .timeLimit(.minutes(1)))
struct ConductorSettleTests {
    /// An ordered log of what happened, written from any thread.
    final class Log: Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// Registers a watcher logging its end, and returns once the loop has taken it (a request
    /// posted after it has come back).
    static func watch(_ conductor: Conductor, _ log: Log) async {
        conductor.observe { update in if update == nil { log.add("watcher ended") } }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            conductor.followOutput(run: 999, { _ in }, ready: { _ in continuation.resume() })
        }
    }

    @Test("a watcher that comes between the drain and the settle is ended after the settle, not at once")
    func betweenDrainAndSettle() async {
        let conductor = Conductor(actions: [])
        let log = Log()
        let (entered, entering) = AsyncStream<Void>.makeStream()
        let (released, releasing) = AsyncStream<Void>.makeStream()
        let stopping = Task {
            await conductor.shutdown(grace: .seconds(5)) {
                entering.yield()
                for await _ in released { break }
                log.add("settled")
            }
        }
        for await _ in entered { break }
        await Self.watch(conductor, log)
        releasing.yield()
        await stopping.value
        #expect(log.all == ["settled", "watcher ended"])
    }

    @Test("after a second signal drained the runs before shutdown began, a watcher still waits for the settle")
    func secondSignalFirst() async {
        let conductor = Conductor(actions: [])
        let log = Log()
        conductor.stopRemaining()
        await Self.watch(conductor, log)
        await conductor.shutdown(grace: .seconds(5)) { log.add("settled") }
        #expect(log.all == ["settled", "watcher ended"])
    }
}
