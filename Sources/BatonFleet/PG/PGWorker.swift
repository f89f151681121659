import BatonCore
import FoundationEssentials

/// Where a worker's connection comes from, and the connection while it is up: opened on first
/// use and again after libpq saw it fail. Owned by one worker's thread.
struct PGLink {
    let conninfo: String
    let defaults: [String: String]
    private(set) var connection: PGConnection?

    init(conninfo: String, defaults: [String: String]) {
        self.conninfo = conninfo
        self.defaults = defaults
    }

    /// The connection, (re)opened if there is none or it failed.
    mutating func open() throws(PGError) -> PGConnection {
        if let connection, connection.isOK { return connection }
        connection = nil
        let opened = try PGConnection(conninfo, defaults: defaults)
        connection = opened
        return opened
    }

    /// Whether a connection is open, as libpq last saw it (before a round trip: one opened earlier).
    var isOpen: Bool { connection?.isOK == true }

    /// Forgets a connection that failed (the next `open` makes a new one).
    mutating func dropIfBroken() {
        if connection?.isOK == false { connection = nil }
    }

    /// Closes the connection.
    mutating func drop() { connection = nil }
}

/// One PostgreSQL connection owned by a `SerialWorker`: callers submit work and hear its result
/// in a completion, called on the connection's thread (it must not block, nor wait for this
/// worker); nobody holds a lock while a round trip is in flight, and no thread but this one
/// waits for it. Work runs in the order submitted.
public final class PGWorker: Sendable {
    typealias Job = @Sendable (inout PGLink) -> Void
    private let worker: SerialWorker<Job>
    /// How many jobs may wait; past it `submit` refuses with `PGError(message: full)`.
    public let capacity: Int
    /// A refusal's message when `capacity` jobs wait.
    public static let full = "too much PostgreSQL work waits"

    /// A worker for `conninfo` (libpq `defaults` under it); its thread ends after `idleTimeout`
    /// with nothing to do (the connection stays open for the next).
    public init(name: String, conninfo: String, defaults: [String: String], capacity: Int = 10_000,
                idleTimeout: Duration? = .seconds(10)) {
        self.capacity = capacity
        worker = SerialWorker(name: name, capacity: capacity, idleTimeout: idleTimeout,
                              state: PGLink(conninfo: conninfo, defaults: defaults)) { link, batch in
            for job in batch.jobs { job(&link) }
        }
    }

    /// Runs `work` on the connection, then `completion` with its value or error. A connection
    /// that failed is dropped; the next work opens another. With `retryingBroken`, work that
    /// failed on a connection opened earlier which is now broken (the server restarted since) runs
    /// once more on a new one: only for work that may run twice (reads), since a write may have
    /// been committed just before the connection broke. Refused (at once, with a connection
    /// error) when `capacity` jobs wait or the worker is closed.
    public func submit<T>(_ work: @escaping @Sendable (PGConnection) throws -> T, retryingBroken: Bool = false,
                          completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        do throws(WorkerRefusal) {
            try worker.submit { link in
                let reused = link.isOpen
                var result = Result { try work(link.open()) }
                if case .failure = result { link.dropIfBroken() }
                if case let .failure(error) = result, retryingBroken, reused, Self.isBroken(error, link) {
                    link.drop()
                    result = Result { try work(link.open()) }
                    if case .failure = result { link.dropIfBroken() }
                }
                completion(result)
            }
        } catch {
            completion(.failure(PGError(sqlState: "08006", message: error == .full ? Self.full : "batond is stopping")))
        }
    }

    /// Whether the connection broke under the work (libpq's `CONNECTION_BAD`, so already dropped,
    /// or an error of the connection class, as a server's "terminating connection" is).
    private static func isBroken(_ error: any Error, _ link: PGLink) -> Bool {
        link.connection == nil || (error as? PGError)?.isConnectionProblem == true
    }

    /// Runs `work` on the connection and returns what it returned; the caller's task waits, no thread does.
    public func run<T: Sendable>(_ work: @escaping @Sendable (PGConnection) throws -> T, retryingBroken: Bool = false) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            submit(work, retryingBroken: retryingBroken) { continuation.resume(with: $0) }
        }
    }

    /// Work waiting or running.
    var load: Int { worker.load }

    /// Runs what is queued (at most `timeout`), then closes the connection.
    @discardableResult
    public func close(timeout: Duration = .seconds(5)) -> Int {
        try? worker.submit({ link in link.drop() }, bounded: false)
        return worker.close(timeout: timeout).count
    }
}
