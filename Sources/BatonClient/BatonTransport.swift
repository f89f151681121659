import BatonCore
import BatonIPC
import Dispatch
import FoundationEssentials
import Glibc

/// The bytes between a `BatonClient` and batond: lines out, lines in, and the end of the
/// connection. A socket in production (`SocketTransport`); a test's fake without one.
public protocol BatonTransport: AnyObject, Sendable {
    /// Starts reading: `receive` gets each line batond sends (newline removed), in order and from
    /// one thread at a time; then `closed` once, saying why the connection ended. Called once.
    func start(receive: @escaping @Sendable ([UInt8]) -> Void, closed: @escaping @Sendable (String) -> Void)
    /// Writes one request line (newline included) after those sent before it; a write that fails
    /// ends the connection, which `closed` reports.
    func send(_ line: [UInt8])
    /// Ends the connection; `closed` follows (if `start` was called).
    func close()
}

/// A connection to batond's Unix socket: a thread of its own reads it, a serial queue writes it,
/// so that no caller blocks on the socket and no lock is held across a system call.
public final class SocketTransport: BatonTransport {
    /// The socket's path, for messages.
    public let path: String
    private let fd: Int32
    private let writer = DispatchQueue(label: "baton-client-write")

    /// Connects to batond's socket; throws `.forbidden` when the socket's mode and group keep
    /// this user out, else `.unavailable` naming the path and the reason.
    public init(path: String) throws(BatonClientError) {
        self.path = path
        fd = try Self.connect(path: path)
    }

    /// A blocking descriptor connected to batond's socket at `path`; throws `.forbidden` when the
    /// socket's mode and group keep this user out, else `.unavailable` naming the path and the reason.
    static func connect(path: String) throws(BatonClientError) -> Int32 {
        do {
            return try UnixSocket.connect(path: path)
        } catch let SocketError.system(_, _, code) where code == EACCES {
            throw .forbidden("you may not use batond's socket \(path)")
        } catch let SocketError.system(_, _, code) {
            throw .unavailable("cannot reach batond at \(path): \(String(cString: strerror(code)))")
        } catch {
            throw .unavailable("cannot reach batond at \(path): \(error)")
        }
    }

    // The reader thread and every queued write hold the transport, so the descriptor is closed
    // only once nothing can use it any more (never a number the process has reused).
    deinit { Glibc.close(fd) }

    public func start(receive: @escaping @Sendable ([UInt8]) -> Void, closed: @escaping @Sendable (String) -> Void) {
        SystemThread.start { [self] in closed(readLines(receive)) }
    }

    /// Reads until the end of the connection; returns why it ended.
    private func readLines(_ receive: ([UInt8]) -> Void) -> String {
        var lines = SocketLines(fd: fd, path: path)
        while true {
            do throws(SocketLines.End) {
                receive(try lines.next())
            } catch {
                return error.reason
            }
        }
    }

    public func send(_ line: [UInt8]) {
        writer.async { [self] in
            var sent = 0
            while sent < line.count {
                let n = line.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, line.count - sent, Int32(MSG_NOSIGNAL)) }
                if n < 0 && errno == EINTR { continue }
                // The reader then sees the end and reports it.
                if n < 0 { shutdown(fd, Int32(SHUT_RDWR)); return }
                sent += n
            }
        }
    }

    public func close() {
        shutdown(fd, Int32(SHUT_RDWR))
    }
}
