import BatonCore
import Foundation
import Testing

/// A CLI process whose stdout is read as it comes, so that a test can wait for a line before it
/// lets the run go on.
final class Streaming: @unchecked Sendable {
    let process = Process()
    /// Guards `text`, appended by the reader thread.
    let output = LogBuffer()

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: Binaries.baton)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        try? pipe.fileHandleForWriting.close()
        let output = output
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let fd = pipe.fileHandleForReading.fileDescriptor
            while true {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                output.append(buffer[0..<n])
            }
        }
    }

    /// Waits until stdout holds `text` (or the process has ended, or `seconds` passed).
    func waitFor(_ text: String, within seconds: Double = 60) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        output.lock.lock()
        defer { output.lock.unlock() }
        while !output.text.contains(text) {
            if !process.isRunning || Date() >= deadline { return output.text.contains(text) }
            output.lock.wait(until: min(deadline, Date().addingTimeInterval(0.2)))
        }
        return true
    }

    /// Its status and stdout once it has ended; one still running 120 s on (a hang) is killed
    /// (its status then SIGKILL's), rather than hang the suite.
    func finish() -> (code: Int32, stdout: String) {
        _ = waitFor("\u{0}never", within: 120)
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        // The reader has what the process wrote once its pipe ends.
        _ = waitFor("\u{0}never")
        output.lock.lock()
        defer { output.lock.unlock() }
        return (process.terminationStatus, output.text)
    }
}

/// Issue 24, item 2: `baton logs` and `baton run --follow`.
@Suite("End to end: baton logs", .offPool)
struct LogsTests {
    static func daemon(_ gate: FifoGate, status: Int = 0) throws -> Daemon {
        let script = gate.directory + "/talk.sh"
        try "echo one; echo oops >&2; cat \"$GATE\" > /dev/null; echo two; exit \(status)\n".write(toFile: script, atomically: true, encoding: .utf8)
        return try Daemon(config: """
            { actions: { talk: { exec: ["sh", "\(script)"], env: { GATE: "\(gate.path)" } }, quick: { exec: ["sh", "-c", "echo a; echo b >&2"] } } }
            """)
    }

    @Test("logs -f ACTION follows the latest run live, then exits with its outcome code; logs RUN prints it after")
    func follow() throws {
        let gate = try FifoGate()
        let daemon = try Self.daemon(gate, status: 3)
        #expect(try daemon.baton("run", "talk", "--detach").code == 0)
        let logs = try Streaming(["--socket", daemon.socket, "logs", "-f", "talk"])
        #expect(logs.waitFor("one\n"))
        gate.release()
        let end = logs.finish()
        #expect(end.code == 1, "\(end)")
        // stdout and stderr are two pipes: how their lines interleave is the kernel's and the
        // scheduler's (under load, the reader may find `two` and `oops` waiting together: CI run
        // ci30a read `one two oops`); each stream keeps its own order.
        let lines = end.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.filter { $0 != "oops" } == ["one", "two", ""] && lines.filter { $0 == "oops" }.count == 1, "\(end.stdout)")
        let after = try daemon.baton("logs", "1", "--stream", "stdout")
        #expect(after.code == 0 && after.stdout == "one\ntwo\n", "\(after)")
        let errors = try daemon.baton("logs", "talk", "--stream", "stderr")
        #expect(errors.stdout == "oops\n", "\(errors)")
    }

    @Test("run --follow prints the output as it comes, then the outcome line")
    func runFollow() throws {
        let gate = try FifoGate()
        let daemon = try Self.daemon(gate)
        let run = try Streaming(["--socket", daemon.socket, "run", "talk", "--follow"])
        #expect(run.waitFor("oops\n") && run.waitFor("one\n"))
        gate.release()
        let end = run.finish()
        #expect(end.code == 0, "\(end)")
        #expect((end.stdout.hasPrefix("one\noops\ntwo\n") || end.stdout.hasPrefix("oops\none\ntwo\n"))
                && end.stdout.contains("talk run 1 succeeded"), "\(end.stdout)")
    }

    @Test("logs --since prints only what arrived since then; a WHEN that is not a time is refused naming it")
    func since() throws {
        let gate = try FifoGate()
        let daemon = try Self.daemon(gate)
        #expect(try daemon.baton("run", "talk", "--detach").code == 0)
        try Eventually.value("run 1's first line", within: 30, { try daemon.baton("logs", "1", "--stream", "stdout").stdout }) { $0 == "one\n" }
        // The next whole second, in the local time `--since` reads: `two` is written after it
        // (the wall clock is what `--since` is about: the condition here is the clock's).
        let boundary = (Date().timeIntervalSince1970 + 1).rounded(.down)
        Eventually.until("the next whole second", within: 2) { Date().timeIntervalSince1970 >= boundary }
        gate.release()
        #expect(try daemon.baton("wait", "1").code == 0)
        var seconds = time_t(boundary)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let when = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                          parts.tm_hour, parts.tm_min, parts.tm_sec)
        let late = try daemon.baton("logs", "1", "--since", when)
        #expect(late.code == 0 && late.stdout == "two\n", "since \(when): \(late)")
        #expect(try daemon.baton("logs", "1", "--since", "1d", "--stream", "stdout").stdout == "one\ntwo\n")
        let bad = try daemon.baton("logs", "1", "--since", "soon")
        #expect(bad.code == 2 && bad.stderr.contains("--since"), "\(bad)")
    }

    @Test("refused: an action without runs, an unknown run, a stream that is not one")
    func refused() throws {
        let gate = try FifoGate()
        let daemon = try Self.daemon(gate)
        let none = try daemon.baton("logs", "quick")
        #expect(none.code == 2 && none.stderr.contains("quick has no runs"), "\(none)")
        #expect(try daemon.baton("logs", "42").code == 2)
        let stream = try daemon.baton("logs", "1", "--stream", "both")
        #expect(stream.code == 2 && stream.stderr.contains("stdout or stderr"), "\(stream)")
    }

    @Test("a follower that stops reading is dropped by batond; baton logs -f resumes from its last byte: no gap, no byte twice")
    func resume() throws {
        let daemon = try Daemon(config: #"{ actions: { flood: { exec: ["seq", "1", "1000000"] } } }"#)
        let expected = (1...1_000_000).map { "\($0)\n" }.joined()
        #expect(try daemon.baton("run", "flood", "--detach").code == 0)
        // Its stdout is not read until the run has ended: it stops reading its socket, and
        // batond closes it past the streaming limit (1 MiB unread; this run writes 6.9 MB).
        // (A `Spawned` child: its pipes are read only in `waitForExit`, which kills one that has
        // not ended 120 s on, where a read to the end of a pipe would wait for good.)
        let logs = try Spawned([Binaries.baton, "--socket", daemon.socket, "logs", "-f", "1"])
        #expect(try daemon.baton("wait", "1").code == 0)
        let ended = logs.waitForExit(within: 120)
        #expect(ended.code == 0, "\(ended.stderr)")
        let printed = Data(ended.stdout.utf8)
        #expect(printed.count == expected.utf8.count)
        #expect(printed == Data(expected.utf8))
    }
}
