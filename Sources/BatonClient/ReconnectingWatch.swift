import BatonCore
import CBatonSystem
import Glibc

/// `BatonClient.watch(socket:)`'s worker: a thread of its own (as `SocketTransport`'s reader)
/// that connects, asks the watch and reads its lines with blocking calls (`OneShotClient`),
/// yielding each update as it comes, and connects again after a restart. No task of Swift's
/// cooperative pool: a caller that blocks every pool thread does not hold the watch up. Where the
/// watch is (its cursor, when batond was last heard) is the thread's own; `cancel` reaches it by
/// a signal its reads and pauses look at (`StopSignal`), not by state the two share.
final class ReconnectingWatch: Sendable {
    let socket: String?
    let action: String?
    let progress: Bool
    let bound: Duration
    let started: @Sendable () -> Void
    let skipped: @Sendable (Int64) -> Void
    private let stop: StopSignal

    init(socket: String?, action: String?, progress: Bool, bound: Duration, started: @escaping @Sendable () -> Void,
         skipped: @escaping @Sendable (Int64) -> Void, stop: StopSignal = StopSignal()) {
        (self.socket, self.action, self.progress, self.bound, self.stop) = (socket, action, progress, bound, stop)
        (self.started, self.skipped) = (started, skipped)
    }

    /// Starts the thread, which yields to `continuation` and finishes it. Without a stop signal (no
    /// descriptor left for its pipe) no thread starts: one that `cancel` could not reach would watch on.
    func start(_ continuation: AsyncThrowingStream<RunUpdate, any Error>.Continuation) {
        guard stop.fd >= 0 else {
            return continuation.finish(throwing: BatonClientError.unavailable("cannot watch: no pipe to cancel the watch by: \(String(cString: strerror(stop.error)))"))
        }
        SystemThread.start { [self] in run(continuation) }
    }

    /// Ends the watch: the read or pause under way returns, and no connection is made again.
    func cancel() { stop.give() }

    /// Watches until batond ends the watch, an error that a new connection does not mend, or `cancel`.
    private func run(_ continuation: AsyncThrowingStream<RunUpdate, any Error>.Continuation) {
        let clock = ContinuousClock()
        var reached = clock.now
        var cursor: WatchCursor?
        while !stop.given() {
            var begun: Timestamp?
            do {
                let client = try OneShotClient(socket: socket, stop: stop.fd)
                _ = try client.call(Request(op: .watch, action: action, progress: progress ? true : nil, after: cursor)) { response in
                    if response.event == "watching" {
                        begun = .now
                        if let count = response.skipped, count > 0 { skipped(count) }
                        started()
                    }
                    guard let update = RunUpdate(response) else { return }
                    reached = clock.now
                    cursor.begin(at: begun)
                    cursor.saw(update)
                    continuation.yield(update)
                }
                return continuation.finish()
            } catch let error as BatonClientError {
                cursor.begin(at: begun)
                switch error {
                case .restarting: break
                case .unavailable where error.endedByRestart: reached = clock.now
                case .unavailable where clock.now - reached < bound: break
                case _ where stop.given(): break
                default: return continuation.finish(throwing: error)
                }
                if stop.given(within: 50) { break }
            } catch {
                return continuation.finish(throwing: error)
            }
        }
        continuation.finish(throwing: CancellationError())
    }
}

/// A signal one thread gives and another's blocking reads and pauses see at once: a pipe whose
/// read end is readable from the first `give` on. Closed when the last holder lets go of it.
final class StopSignal: Sendable {
    /// The end to look at (poll for reading); -1 where no pipe could be made (then never given).
    let fd: Int32
    private let writeEnd: Int32
    /// Why no pipe could be made (`errno`), or 0.
    let error: Int32

    /// `pipes`: how the pipe is made (a test gives one that fails).
    init(pipes: (UnsafeMutablePointer<Int32>) -> Int32 = { baton_pipe($0) }) {
        var ends: [Int32] = [-1, -1]
        // Close-on-exec from the start (pipe2: no fork in between inherits it); the write end
        // non-blocking: a give never waits.
        let made = pipes(&ends) == 0
        if made { _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK) }
        (fd, writeEnd, error) = made ? (ends[0], ends[1], 0) : (-1, -1, errno)
    }

    deinit {
        if fd >= 0 { close(fd) }
        if writeEnd >= 0 { close(writeEnd) }
    }

    func give() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Whether it was given, waiting up to `milliseconds` for it.
    func given(within milliseconds: Int32 = 0) -> Bool {
        var polled = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&polled, 1, milliseconds)
            if ready >= 0 || errno != EINTR { return ready > 0 }
        }
    }
}
