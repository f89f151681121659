@testable import BatonProcess
import BatonRuntime
import Glibc
import Testing

/// `AttemptOutput.read` on real pipes: how a read after an event leaves a pipe.
@Suite("Attempt output: reading a pipe")
struct AttemptOutputTests {
    /// A pipe with `bytes` written into it (non-blocking read end), its write end closed unless `keepWriter`.
    static func pipe(_ bytes: Int, keepWriter: Bool = false, size: Int32 = 0) -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        precondition(Glibc.pipe(&fds) == 0)
        _ = fcntl(fds[0], F_SETFL, O_NONBLOCK)
        // F_SETPIPE_SZ (F_LINUX_SPECIFIC_BASE + 7): not in Glibc's Swift module.
        if size > 0 { precondition(fcntl(fds[1], 1_031, size) >= size) }
        let chunk = [UInt8](repeating: 7, count: bytes)
        precondition(chunk.withUnsafeBytes { write(fds[1], $0.baseAddress, bytes) } == bytes)
        if !keepWriter { close(fds[1]) }
        return (fds[0], keepWriter ? fds[1] : -1)
    }

    static func read(_ fd: Int32, mask: UInt32, limit: Int = AttemptOutput.readsPerTurn) -> (AttemptOutput.Left, Int) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
        defer { buffer.deallocate() }
        var taken = 0
        let left = AttemptOutput.read(fd, limit: limit, shortIsEmpty: AttemptOutput.stopsAtShortRead(mask), into: buffer) { taken += $0.count }
        return (left, taken)
    }

    /// review-loop6 finding 1: the kernel's poll of a pipe can say hung up without input while a
    /// write made just before the last close is still in it. The reader must not trust the mask.
    @Test("hung up without EPOLLIN in the mask, yet bytes in the pipe: they are read, and the end with them")
    func hangUpReadsToTheEnd() {
        let (fd, _) = Self.pipe(1)
        defer { close(fd) }
        let (left, taken) = Self.read(fd, mask: Epoll.hangUp)
        #expect(taken == 1)
        #expect(left == .ended)
    }

    @Test("not hung up, a short read empties the pipe: no second read to learn EAGAIN")
    func shortIsEmpty() {
        let (fd, writer) = Self.pipe(100, keepWriter: true)
        defer { close(fd); close(writer) }
        let (left, taken) = Self.read(fd, mask: Epoll.input)
        #expect(taken == 100)
        #expect(left == .empty)
    }

    @Test("the limit of reads first: more may be there, and the rest is still in the pipe")
    func limitFirst() {
        let (fd, writer) = Self.pipe(3 * 65_536, keepWriter: true, size: 1 << 20)
        defer { close(fd); close(writer) }
        let (left, taken) = Self.read(fd, mask: Epoll.input, limit: 2)
        #expect(left == .more)
        #expect(taken == 2 * 65_536)
        #expect(Self.read(fd, mask: Epoll.input).1 == 65_536)
    }
}
