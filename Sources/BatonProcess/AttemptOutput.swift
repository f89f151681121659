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

    init(pipes: Pipes, tailLimit: Int) {
        self.pipes = pipes
        tail = OutputTail(limit: tailLimit)
    }

    /// At most this many reads of one pipe per readiness: a process that writes as fast as batond
    /// reads (`cat /dev/zero`) would otherwise keep the loop in one pipe, and every other run,
    /// trigger and timer waiting. The epoll watch is level-triggered: the rest comes next turn.
    static let readsPerTurn = 4
    /// At the attempt's end: 1 MiB, the most a pipe holds unless root raised `fs.pipe-max-size`
    /// (a leftover kept running may still be writing: the end cannot wait for the pipe to empty).
    static let readsAtEnd = 16

    /// Reads what `fd` has now (up to `limit` buffers), handing each chunk to `take`; returns
    /// whether it is still open. Only on the reactor's thread, with its buffer (one serves every
    /// attempt of that loop).
    static func read(_ fd: Int32, limit: Int = readsPerTurn, into buffer: UnsafeMutableRawBufferPointer,
                     _ take: (UnsafeRawBufferPointer) -> Void) -> Bool {
        var reads = 0
        while true {
            if reads == limit { return true }
            reads += 1
            let n = Glibc.read(fd, buffer.baseAddress, buffer.count)
            if n > 0 {
                take(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                continue
            }
            if n < 0 && errno == EINTR { continue }
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
        }
    }

    /// Takes what a shim spooled while no batond read its pipes (stdout and stderr interleaved).
    mutating func takeSpooled(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { tail.append($0) }
    }

    /// Takes a chunk read from `fd`; returns the progress lines it completed.
    mutating func take(_ chunk: UnsafeRawBufferPointer, from fd: Int32) -> [Progress] {
        guard fd == pipes.progress else {
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
