import BatonClient
import BatonCore
import Foundation

/// A transport without a socket: the test reads the requests the client sent, in order, and
/// hands it batond's lines and the connection's end itself.
final class FakeTransport: BatonTransport, @unchecked Sendable {
    // `lock` guards `receive`, `closed` and `ended`; the callbacks are called with it released.
    private let lock = NSLock()
    private var receive: (@Sendable ([UInt8]) -> Void)?
    private var closed: (@Sendable (String) -> Void)?
    private var ended = false
    private(set) var starts = 0
    let (requests, sentRequests) = AsyncStream<Request>.makeStream()
    private var iterator: AsyncStream<Request>.AsyncIterator?

    init() { iterator = requests.makeAsyncIterator() }

    func start(receive: @escaping @Sendable ([UInt8]) -> Void, closed: @escaping @Sendable (String) -> Void) {
        lock.withLock {
            starts += 1
            self.receive = receive
            self.closed = closed
        }
    }

    func send(_ line: [UInt8]) {
        precondition(line.last == UInt8(ascii: "\n"), "a request line ends with its newline")
        // swiftlint:disable:next force_try
        sentRequests.yield(try! JSONDecoder().decode(Request.self, from: Data(line.dropLast())))
    }

    func close() { end("the client closed the connection") }

    /// The next request the client sent (waits for it).
    func nextRequest() async -> Request? {
        await iterator?.next()
    }

    /// batond sends `response`.
    func answer(_ response: Response) { deliver(response.jsonLine()) }

    /// batond sends these bytes as one line.
    func deliver(_ line: [UInt8]) {
        let receive = lock.withLock { self.receive }
        receive?(line)
    }

    /// The connection ends.
    func end(_ reason: String) {
        let closed = lock.withLock { () -> (@Sendable (String) -> Void)? in
            defer { ended = true }
            return ended ? nil : self.closed
        }
        closed?(reason)
    }
}
