@testable import BatonEngine
@testable import BatonProcess
import BatonRuntime
import Foundation
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

@Suite("Attempt output: re-reads of a pipe")
struct AttemptOutputRereadTests {
    /// review-loop6 finding 2: a pipe kept full hit its limit each turn and posted one more re-read
    /// each time, so they piled up and its share of a turn grew.
    @Test("one re-read pending per pipe at most: asked again before it ran, none more is posted; once it ran, one may be")
    func oneAtATime() {
        var output = AttemptOutput(pipes: .init(stdout: 10, stderr: 11, progress: -1), tailLimit: 1_024)
        var asked: [Bool] = []
        asked.append(output.askReread(10))
        asked.append(output.askReread(10))  // a second re-read of stdout while one is pending
        asked.append(output.askReread(11))  // stderr's is its own
        let stdoutOpen = output.rereadRuns(10)
        asked.append(output.askReread(10))
        output.closed(11)
        let stderrOpen = output.rereadRuns(11)  // a pipe closed meanwhile is not read
        asked.append(output.askReread(11))
        #expect(asked == [true, false, true, true, true])
        #expect(stdoutOpen && !stderrOpen)
    }
}

@Suite("Attempt output: a pipe left full")
struct AttemptOutputStandingTests {
    /// Edge-triggered, one write of 512 KiB into an enlarged pipe is one edge, and a readiness reads
    /// 4 × 64 KiB: the rest comes only by the re-read the reader posts (`Left.more`). The writer then
    /// waits (a FIFO the test opens at last): no hang-up or later write would read the rest.
    @Test("a writer that fills an enlarged pipe with 512 KiB at once and then waits: all of it is read while it waits")
    func standingOutputIsRead() async throws {
        let fifo = NSTemporaryDirectory() + "baton-standing-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let script = "import fcntl, os\nfcntl.fcntl(1, 1031, 1 << 20)\nos.write(1, b'x' * (512 << 10))\nopen(os.environ['GATE']).read()\n"
        let job = Job(runID: 1, action: Action(name: "t", exec: ["/usr/bin/python3", "-c", script], env: ["GATE": fifo]), attempt: 1, params: [:])
        let probe = AttemptProbe(ExecRunner(), job)
        let read = { probe.events.all.reduce(0) { total, event in
            if case let .output(_, bytes) = event { total + bytes.count } else { total }
        } }
        guard await Eventually.untilAwaited("512 KiB read while the writer waits (read \(read()))", { read() == 512 << 10 }) else {
            return probe.attempt.stop(grace: .milliseconds(100))
        }
        // Let the writer go: it opens the FIFO (this open waits for it), reads its end, and exits.
        close(open(fifo, O_WRONLY))
        let outcome = await probe.outcome()
        #expect(outcome.result.succeeded, "\(outcome.result.error ?? "")")
    }
}
