import BatonEngine
import BatonRuntime
import FoundationEssentials
import Glibc

/// What an attempt's pipes have said: the tail of stdout and stderr as they arrived, the last
/// line of stderr (for the error message), and the progress lines of `BATON_PROGRESS_FD`.
struct AttemptOutput {
    struct Pipes: Sendable {
        var stdout: Int32
        var stderr: Int32
        var progress: Int32
        var open: [Int32] { [stdout, stderr, progress].filter { $0 >= 0 } }
    }

    private(set) var pipes: Pipes
    private(set) var tail: OutputTail
    private(set) var lastError = LastLine()
    private var progressLine: [UInt8] = []
    /// The pipes with a re-read posted and not yet run (`Left.more`).
    private var rereads: Set<Int32> = []

    init(pipes: Pipes, tailLimit: Int) {
        self.pipes = pipes
        tail = OutputTail(limit: tailLimit)
    }

    /// At most this many reads of one pipe per readiness: a process that writes as fast as batond
    /// reads (`cat /dev/zero`) would otherwise keep the loop in one pipe, and every other run,
    /// trigger and timer waiting. The watch is edge-triggered: the rest is read by a re-read the
    /// reader posts (`Left.more`), one at most pending per pipe (`askReread`).
    static let readsPerTurn = 4
    /// At the attempt's end: 1 MiB, the most a pipe holds unless root raised `fs.pipe-max-size`
    /// (a leftover kept running may still be writing: the end cannot wait for the pipe to empty).
    static let readsAtEnd = 16

    /// How a pipe was left by a read of it.
    enum Left: Equatable {
        /// Nothing more to read now: it said so (EAGAIN), or a read filled less than the buffer.
        case empty
        /// The limit of reads came first: more may be there.
        case more
        /// At its end (or failed): to be closed.
        case ended
    }

    /// Whether a read after an event with the epoll `mask` may stop at a short read. Not hung up, a
    /// short read empties a pipe: what comes later is a new edge. Hung up, never: it reads on to
    /// the end (0, or EIO for a pty master), whatever the mask says. `EPOLLHUP` without `EPOLLIN`
    /// is no proof of an empty pipe: the kernel's `pipe_poll` (and `n_tty_poll`) take no lock and
    /// load the buffer before the writers, so a write then the last close (a shim's last chunk at
    /// its exit or a hand-over) can land between the two loads, and bytes are still there.
    /// (loop6 trusted it to save one read per pipe end; review-loop6 finding 1 saw poll(2) do it.)
    static func stopsAtShortRead(_ mask: UInt32) -> Bool { mask & Epoll.hangUp == 0 }

    /// Reads what `fd` has now (up to `limit` buffers), handing each chunk to `take`. With
    /// `shortIsEmpty`, a read that fills less than the buffer ends it (`.empty`): a pipe returns
    /// less only when it has no more (one in packet mode, `O_DIRECT` set by its writer, is read a
    /// packet an edge: the rest waits for the next write or the hang-up); without, it reads on to
    /// EAGAIN or the end (a pipe that hung up is read to its end). Only on the reactor's thread,
    /// with its buffer (one serves every attempt of that loop).
    static func read(_ fd: Int32, limit: Int = readsPerTurn, shortIsEmpty: Bool = false,
                     into buffer: UnsafeMutableRawBufferPointer, _ take: (UnsafeRawBufferPointer) -> Void) -> Left {
        var reads = 0
        while true {
            if reads == limit { return .more }
            reads += 1
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                take(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                if shortIsEmpty && n < buffer.count { return .empty }
                continue
            }
            if n < 0 && errno == EINTR { continue }
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? .empty : .ended
        }
    }

    /// Bytes of stdout and stderr taken from the pipes (each told as it was taken).
    private(set) var told: Int64 = 0

    /// Takes what a shim spooled while no batond read its pipes (stdout and stderr interleaved).
    mutating func takeSpooled(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { tail.append($0) }
    }

    /// Takes a chunk read from `fd`; returns the progress lines it completed.
    mutating func take(_ chunk: UnsafeRawBufferPointer, from fd: Int32) -> [Progress] {
        guard fd == pipes.progress else {
            told += Int64(chunk.count)
            tail.append(chunk)
            if fd == pipes.stderr { lastError.append(chunk) }
            return []
        }
        var reports: [Progress] = []
        for byte in chunk {
            if byte == UInt8(ascii: "\n") {
                if let report = Progress(line: String(decoding: progressLine, as: UTF8.self)) { reports.append(report) }
                progressLine.removeAll(keepingCapacity: true)
            } else if progressLine.count < 1_024 {
                progressLine.append(byte)
            }
        }
        return reports
    }

    /// The stream `fd` carries, or nil for the progress pipe (or one already closed).
    func stream(of fd: Int32) -> StandardStream? {
        fd == pipes.stdout ? .stdout : fd == pipes.stderr ? .stderr : nil
    }

    /// Whether a re-read of `fd` is to be posted: not while one is pending (re-reads of a pipe
    /// kept full would otherwise pile up, one more a turn, and its share of a turn grow unbounded).
    mutating func askReread(_ fd: Int32) -> Bool { rereads.insert(fd).inserted }

    /// The posted re-read of `fd` runs (it is no longer pending): whether the pipe is still open.
    mutating func rereadRuns(_ fd: Int32) -> Bool {
        rereads.remove(fd)
        return pipes.open.contains(fd)
    }

    /// The pipe ended.
    mutating func closed(_ fd: Int32) {
        if pipes.stdout == fd { pipes.stdout = -1 }
        if pipes.stderr == fd { pipes.stderr = -1 }
        if pipes.progress == fd { pipes.progress = -1 }
    }

    /// A progress line the process did not end with a newline.
    mutating func finalProgress() -> Progress? {
        defer { progressLine = [] }
        return progressLine.isEmpty ? nil : Progress(line: String(decoding: progressLine, as: UTF8.self))
    }

    mutating func closeAll() { pipes = Pipes(stdout: -1, stderr: -1, progress: -1) }
}
