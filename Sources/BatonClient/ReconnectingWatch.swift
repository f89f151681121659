import BatonCore
import Glibc

/// `BatonClient.watch(socket:)`'s worker: a thread of its own (as `SocketTransport`'s reader)
/// that connects, asks the watch and reads its lines with blocking calls (`OneShotClient`),
/// yielding each update as it comes, and connects again after a restart. No task of Swift's
/// cooperative pool: a caller that blocks every pool thread does not hold the watch up. Where the
/// watch is (its cursor, when batond was last heard) is the thread's own; only the connection it
/// reads is shared, with `cancel`, which ends it.
final class ReconnectingWatch: Sendable {
    let socket: String?
    let action: String?
    let progress: Bool
    let bound: Duration
    let started: @Sendable () -> Void
    let skipped: @Sendable (Int64) -> Void
    /// The connection the thread reads (nil between two), and whether `cancel` was called.
    private let shared = Locked<(connection: SocketDescriptor?, cancelled: Bool)>((nil, false))

    init(socket: String?, action: String?, progress: Bool, bound: Duration, started: @escaping @Sendable () -> Void,
         skipped: @escaping @Sendable (Int64) -> Void) {
        (self.socket, self.action, self.progress, self.bound) = (socket, action, progress, bound)
        (self.started, self.skipped) = (started, skipped)
    }

    /// Starts the thread, which yields to `continuation` and finishes it.
    func start(_ continuation: AsyncThrowingStream<RunUpdate, any Error>.Continuation) {
        SystemThread.start { [self] in run(continuation) }
    }

    /// Ends the watch: the connection read now is shut down, and no other is made.
    func cancel() {
        let connection = shared.withLock { shared in
            shared.cancelled = true
            return shared.connection
        }
        connection?.shutdown()
    }

    /// Watches until batond ends the watch, an error that a new connection does not mend, or `cancel`.
    private func run(_ continuation: AsyncThrowingStream<RunUpdate, any Error>.Continuation) {
        let clock = ContinuousClock()
        var reached = clock.now
        var cursor: WatchCursor?
        while true {
            var begun: Timestamp?
            do {
                let client = try OneShotClient(socket: socket)
                defer { reading(nil) }
                guard reading(client.descriptor) else { break }
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
                if shared.withLock({ $0.cancelled }) { break }
                cursor.begin(at: begun)
                switch error {
                case .restarting: break
                case .unavailable where error.endedByRestart: reached = clock.now
                case .unavailable where clock.now - reached < bound: break
                default: return continuation.finish(throwing: error)
                }
                usleep(50_000)
            } catch {
                return continuation.finish(throwing: error)
            }
        }
        continuation.finish(throwing: CancellationError())
    }

    /// Makes `connection` the one `cancel` ends (nil: none); false where `cancel` came first.
    @discardableResult
    private func reading(_ connection: SocketDescriptor?) -> Bool {
        shared.withLock { shared in
            shared.connection = connection
            return !shared.cancelled
        }
    }
}
