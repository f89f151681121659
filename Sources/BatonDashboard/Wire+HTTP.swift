import BatonIPC
import Foundation

/// Reading a request and writing an answer on a connected socket, each within a deadline:
/// nothing waits on a slow or silent client for longer than that.
struct HTTPWire {
    let fd: Int32
    let deadline: ContinuousClock.Instant

    enum Read {
        case request(HTTPRequestHead, body: [UInt8])
        case refused(status: Int, reason: String)
        /// The peer went away or the deadline passed with nothing to answer.
        case gone
    }

    /// Reads a head (bounded by `limits`) and, for a head the gate lets through, its body.
    func readHead(limit: Int, maxFields: Int) -> (Read, rest: [UInt8]) {
        var input: [UInt8] = []
        while true {
            switch HTTPRequestHead.parse(input, limit: limit, maxFields: maxFields) {
            case let .head(head, length): return (.request(head, body: []), Array(input[length...]))
            case let .refused(status, reason): return (.refused(status: status, reason: reason), [])
            case .incomplete:
                guard let more = receive() else {
                    return (input.isEmpty ? .gone : .refused(status: 408, reason: "the request took too long"), [])
                }
                input += more
            }
        }
    }

    /// Reads until `count` bytes of body are in hand (the head's leftovers first).
    func readBody(count: Int, have: [UInt8]) -> [UInt8]? {
        var body = have
        while body.count < count {
            guard let more = receive() else { return nil }
            body += more
        }
        return Array(body.prefix(count))
    }

    /// The next bytes, or nil at end of stream, on error or at the deadline.
    func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            guard wait(for: Int16(POLLIN)) else { return nil }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { return Array(buffer[..<n]) }
            if n == 0 || (errno != EAGAIN && errno != EINTR) { return nil }
        }
    }

    /// Writes everything before `deadline`; false when the peer is gone or too slow.
    @discardableResult
    func send(_ bytes: [UInt8], deadline: ContinuousClock.Instant? = nil) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0 && errno != EAGAIN && errno != EINTR { return false }
            guard wait(for: Int16(POLLOUT), until: deadline ?? self.deadline) else { return false }
        }
        return true
    }

    func send(_ text: String, deadline: ContinuousClock.Instant? = nil) -> Bool { send(Array(text.utf8), deadline: deadline) }

    /// Waits until the socket is ready for `events`; false at the deadline or on a hangup.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant? = nil) -> Bool {
        let end = deadline ?? self.deadline
        while true {
            let left = end - .now
            guard left > .zero else { return false }
            var pfd = pollfd(fd: fd, events: events, revents: 0)
            let n = poll(&pfd, 1, Int32(clamping: left.milliseconds + 1))
            if n > 0 { return pfd.revents & (events | Int16(POLLHUP) | Int16(POLLERR)) != 0 }
            if n < 0 && errno != EINTR { return false }
        }
    }
}

extension Duration {
    var milliseconds: Int64 { components.seconds * 1_000 + components.attoseconds / 1_000_000_000_000_000 }
}
