import BatonIPC
import Glibc

/// batond's lines on a blocking socket, read on the calling thread, and the end of the connection
/// as the reason a client gives for losing it. Both clients read with it: `SocketTransport`'s
/// reader thread and `OneShotClient`, so that either says the same of the same end.
struct SocketLines {
    /// The connection ended (or cannot be trusted any more): why, as the client says it.
    struct End: Error {
        let reason: String
    }

    let fd: Int32
    let path: String
    /// Where a read also looks, if anywhere: once it is readable, the connection has ended
    /// (`StopSignal`, given by a thread that ends the reading one's connection).
    let stop: Int32?
    private var splitter = FrameSplitter(limit: 64 << 20)
    /// Left unfilled: a read writes what it reads, and only that is looked at (zeroing 64 KiB would
    /// touch 16 pages that a short answer never needs: a tenth of a short command's page faults).
    private var buffer = [UInt8](unsafeUninitializedCapacity: 65_536) { _, count in count = 65_536 }
    /// Lines read and not yet taken, in order; then the end a read found, if it found one.
    private var ready: [[UInt8]] = []
    private var end: End?

    init(fd: Int32, path: String, stop: Int32? = nil) {
        self.fd = fd
        self.path = path
        self.stop = stop
    }

    /// The next line (newline removed), reading as much as it takes; throws once the connection ended.
    mutating func next() throws(End) -> [UInt8] {
        while ready.isEmpty {
            if let end { throw end }
            read()
        }
        return ready.removeFirst()
    }

    private mutating func read() {
        if let stop, !readable(unless: stop) { return end = End(reason: "the connection to batond at \(path) was ended here") }
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { return }
        if n == 0 { return end = End(reason: "lost batond at \(path): batond closed the connection before answering") }
        if n < 0 { return end = End(reason: "lost batond at \(path): \(String(cString: strerror(errno)))") }
        let frames = buffer.withUnsafeBytes { splitter.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        for frame in frames {
            guard case let .line(line) = frame else { return end = End(reason: "batond sent a line over 64 MiB at \(path)") }
            ready.append(line)
        }
    }

    /// Waits until the socket can be read (or has ended); false where `stop` was readable first.
    private func readable(unless stop: Int32) -> Bool {
        var polled = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: stop, events: Int16(POLLIN), revents: 0)]
        while poll(&polled, 2, -1) < 0 && errno == EINTR {}
        return polled[1].revents == 0
    }

    /// Why a client stops at a line it cannot read: it may be some request's answer, and waiting on would hang it.
    static func unreadable(_ line: [UInt8]) -> String {
        "batond sent a line this client cannot read: \(String(decoding: line.prefix(200), as: UTF8.self))"
    }
}
