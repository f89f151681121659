import CBatonSystem
import Foundation

/// A raw HTTP/1.1 client for tests: sends exactly the bytes given, reads the whole answer (every
/// dashboard answer closes its connection), or reads an event stream piece by piece.
final class HTTPProbe {
    let fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `address` (numeric IPv4 or IPv6) on `port`.
    init(port: UInt16, address: String = "127.0.0.1") throws {
        // `fd` is set only once connected: a throw after every property is set would run deinit,
        // which would close the descriptor a second time (by then perhaps another test's: CI saw
        // EBADF in batond's and libpq's sockets while chromedriver was being polled).
        let v6 = address.contains(":")
        let socketFD = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
        var storage = sockaddr_storage()
        let length: Int
        if v6 {
            length = withUnsafeMutableBytes(of: &storage) { raw in
                let six = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                six.pointee.sin6_family = sa_family_t(AF_INET6)
                six.pointee.sin6_port = port.bigEndian
                inet_pton(AF_INET6, address, &six.pointee.sin6_addr)
                return MemoryLayout<sockaddr_in6>.size
            }
        } else {
            length = withUnsafeMutableBytes(of: &storage) { raw in
                let four = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                four.pointee.sin_family = sa_family_t(AF_INET)
                four.pointee.sin_port = port.bigEndian
                four.pointee.sin_addr.s_addr = inet_addr(address)
                return MemoryLayout<sockaddr_in>.size
            }
        }
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketFD, $0, socklen_t(length)) }
        }
        guard result == 0 else {
            let code = errno
            close(socketFD)
            throw DashboardError("connect to \(address) port \(port): errno \(code)")
        }
        fd = socketFD
    }

    deinit { close(fd) }

    struct Answer {
        var status: Int
        var head: String
        var body: String
        /// The body as it came, byte for byte.
        var bytes: [UInt8] = []
        func field(_ name: String) -> String? {
            head.split(separator: "\r\n").first { $0.lowercased().hasPrefix(name.lowercased() + ":") }
                .map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces) }
        }
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// Reads until the server closes (or `timeout`).
    func answer(timeout: Duration = .seconds(15)) throws -> Answer {
        let end = ContinuousClock.now + timeout
        // Until the server closes, or the body its Content-Length announces is in (chromedriver keeps the connection).
        while !complete, let more = readSome(until: end) { buffer += more }
        let text = String(decoding: buffer, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { throw DashboardError("no answer head in \(text.debugDescription)") }
        let head = String(text[..<split.lowerBound])
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        let bodyStart = Array(head.utf8).count + 4
        return Answer(status: status, head: head, body: String(text[split.upperBound...]), bytes: Array(buffer[bodyStart...]))
    }

    private var complete: Bool {
        guard let end = buffer.indices.dropLast(3).first(where: { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }) else { return false }
        let head = String(decoding: buffer[..<end], as: UTF8.self).lowercased()
        guard let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
              let length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) else { return false }
        return buffer.count - (end + 4) >= length
    }

    /// One request with the usual fields, answered.
    static func request(port: UInt16, address: String = "127.0.0.1", _ method: String, _ path: String, fields: [String: String] = [:],
                        body: String = "") throws -> Answer {
        let probe = try HTTPProbe(port: port, address: address)
        var text = "\(method) \(path) HTTP/1.1\r\n"
        var fields = fields
        if fields["Host"] == nil { fields["Host"] = (address.contains(":") ? "[\(address)]" : address) + ":\(port)" }
        if !body.isEmpty || method == "POST" { fields["Content-Length"] = String(body.utf8.count) }
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
        probe.send(text + "\r\n" + body)
        return try probe.answer()
    }

    /// An event of a stream: its id, name and data.
    struct Event: Equatable {
        var id: String?
        var name: String
        var data: String
    }

    /// Reads the stream's head, then returns its next event (comments skipped), or nil at its end or timeout.
    func nextEvent(timeout: Duration = .seconds(20)) -> Event? {
        let end = ContinuousClock.now + timeout
        while true {
            let text = String(decoding: buffer, as: UTF8.self)
            if let range = text.range(of: "\n\n") {
                let block = String(text[..<range.lowerBound])
                buffer = Array(text[range.upperBound...].utf8)
                if block.hasPrefix("HTTP/1.1") || block.hasPrefix(":") || block.hasPrefix("retry:") { continue }
                var event = Event(id: nil, name: "message", data: "")
                for line in block.split(separator: "\n") {
                    if line.hasPrefix("id: ") { event.id = String(line.dropFirst(4)) }
                    if line.hasPrefix("event: ") { event.name = String(line.dropFirst(7)) }
                    if line.hasPrefix("data: ") { event.data += String(line.dropFirst(6)) }
                }
                return event
            }
            guard let more = readSome(until: end) else { return nil }
            buffer += more
        }
    }

    private func readSome(until end: ContinuousClock.Instant) -> [UInt8]? {
        let left = end - .now
        guard left > .zero else { return nil }
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(left.components.seconds * 1_000 + 1)) > 0 else { return nil }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        return n > 0 ? Array(chunk[..<n]) : nil
    }
}
