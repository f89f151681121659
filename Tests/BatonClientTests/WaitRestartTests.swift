@testable import BatonClient
import BatonCore
import Foundation
import Testing

/// `BatonClient.wait(run:socket:)` against a batond that restarts in place on every connection
/// (each request line is answered `{"restarting":true}`, then the connection closes).
@Suite("BatonClient.wait: riding out restarts", .timeLimit(.minutes(1)))
struct WaitRestartTests {
    /// A listener at `path` that answers the first line of each connection with the restart's
    /// last line and closes it; runs until `stop` is set.
    static func restartingForever(_ path: String) throws -> Int32 {
        let fd = try FakeBatond.listen(path)
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                _ = FakeBatond.request(on: client)
                FakeBatond.send(Array(#"{"restarting":true}"#.utf8), to: client)
                close(client)
            }
        }
        return fd
    }

    @Test("past its bound a wait batond never took throws unavailable, never restarting (Context.call would send the trigger again)")
    func boundIsUnavailable() async throws {
        let path = NSTemporaryDirectory() + "wait-restart-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let listener = try Self.restartingForever(path)
        defer { shutdown(listener, Int32(SHUT_RDWR)); close(listener); unlink(path) }
        do {
            _ = try await BatonClient.wait(run: 7, socket: path, reconnectingFor: .zero)
            Issue.record("a wait no batond answered returned")
        } catch let error as BatonClientError {
            guard case .unavailable = error else {
                Issue.record("thrown: \(error)")
                return
            }
        }
    }

    /// A listener at `path` playing a stop: the first connection's wait gets the run as it is,
    /// then, once `stop` is signalled, the stop's last line; the next connection's wait gets the run's end.
    static func stoppingOnce(_ path: String, stop: DispatchSemaphore) throws -> Int32 {
        let fd = try FakeBatond.listen(path)
        Thread.detachNewThread {
            var first = true
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                var response = Response(id: FakeBatond.request(on: client)?.id)
                func send(_ text: String) { FakeBatond.send(Array(text.utf8), to: client) }
                func encoded(_ response: Response) -> String { String(decoding: (try? JSONEncoder().encode(response)) ?? Data(), as: UTF8.self) }
                if first {
                    first = false
                    response.ok = nil
                    response.event = "update"
                    response.run = BatonClientTests.run(7, .loading)
                    send(encoded(response))
                    // The listener's own thread: blocking here holds no test's. Bounded, so that a
                    // wait that never saw the update (the test fails) leaves no thread behind.
                    _ = stop.wait(timeout: .now() + 30)
                    send(#"{"restarting":true}"#)
                } else {
                    response.ok = true
                    response.run = BatonClientTests.run(7, .failure)
                    send(encoded(response))
                }
                close(client)
            }
        }
        return fd
    }

    @Test("a wait attached longer than its bound before a stop still gets the whole bound after it (counted from batond's last line, not from the connection)")
    func boundCountsFromTheStop() async throws {
        let path = NSTemporaryDirectory() + "wait-stop-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).sock"
        let stop = DispatchSemaphore(value: 0)
        let listener = try Self.stoppingOnce(path, stop: stop)
        defer { shutdown(listener, Int32(SHUT_RDWR)); close(listener); unlink(path) }
        let seen = Locked(0)
        // The wait attached, 2 s pass on its clock (over its 1 s bound) before batond's stop: a
        // bound counted from the connection or the update would end it there, unavailable.
        let clock = SteppedClock()
        let ended = try await BatonClient.wait(run: 7, socket: path, reconnectingFor: .seconds(1), clock: clock) { _ in
            if seen.withLock({ $0 += 1; return $0 }) == 1 {
                clock.pass(.seconds(2))
                stop.signal()
            }
        }
        #expect(ended.phase == .failure)
        #expect(seen.withLock { $0 } == 1)
    }
}

/// Real time plus what a test makes pass at once (`pass`): a bound counted on it sees time pass
/// that nobody waited out.
struct SteppedClock: Clock {
    private let passed = Locked(Duration.zero)

    var now: ContinuousClock.Instant { ContinuousClock.now + passed.withLock { $0 } }
    var minimumResolution: Duration { ContinuousClock().minimumResolution }

    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration?) async throws {
        try await ContinuousClock().sleep(until: deadline - passed.withLock { $0 }, tolerance: tolerance)
    }

    /// Makes `duration` pass for whoever reads the clock from now on.
    func pass(_ duration: Duration) { passed.withLock { $0 += duration } }
}
