import BatonCore
import FoundationEssentials
import Glibc

/// A blocking client of batond's socket: send requests, read response lines.
public final class Client {
    private let fd: Int32
    private var splitter = FrameSplitter(limit: 64 << 20)
    private var ready: [[UInt8]] = []
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()
    private var nextID: Int64 = 1

    /// Connects to the daemon's socket.
    public init(path: String) throws(SocketError) {
        fd = try UnixSocket.connect(path: path)
    }

    deinit { close(fd) }

    /// Sends a request, giving it the next id when it has none; returns the id.
    @discardableResult
    public func send(_ request: Request) throws -> RequestID {
        var request = request
        if request.id == nil {
            request.id = .number(nextID)
            nextID += 1
        }
        var data = try encoder.encode(request)
        data.append(UInt8(ascii: "\n"))
        try sendRaw(data)
        return request.id!
    }

    /// Sends bytes as they are (for tests of malformed input).
    public func sendRaw(_ data: Data) throws {
        try data.withUnsafeBytes { bytes in
            var sent = 0
            while sent < bytes.count {
                let n = Glibc.send(fd, bytes.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw SocketError.system("send", path: "", errno: errno)
                }
                sent += n
            }
        }
    }

    /// Reads the next response line; nil when the daemon closed the connection or `timeout` passed.
    public func receive(timeout: Duration? = nil) throws -> Response? {
        guard let line = try receiveLine(timeout: timeout) else { return nil }
        return try decoder.decode(Response.self, from: Data(line))
    }

    /// Reads the next raw line; nil at end of stream or timeout.
    public func receiveLine(timeout: Duration? = nil) throws -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while ready.isEmpty {
            if let timeout {
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ms = Int32(clamping: timeout.microseconds / 1_000)
                let n = poll(&pfd, 1, ms)
                if n == 0 { return nil }
                if n < 0 && errno == EINTR { continue }
            }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { return nil }
            if n < 0 {
                if errno == EINTR { continue }
                throw SocketError.system("read", path: "", errno: errno)
            }
            for frame in buffer.withUnsafeBytes({ splitter.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }) {
                if case let .line(bytes) = frame { ready.append(bytes) }
            }
        }
        return ready.removeFirst()
    }

    /// Sends a request and returns its final answer, passing intermediate events to `onEvent`.
    public func call(_ request: Request, onEvent: (Response) -> Void = { _ in }) throws -> Response {
        let id = try send(request)
        while let response = try receive() {
            guard response.id == id else { continue }
            if response.ok != nil { return response }
            onEvent(response)
        }
        throw SocketError.closed
    }

    /// The descriptor, for polling alongside other input.
    public var fileDescriptor: Int32 { fd }
}
