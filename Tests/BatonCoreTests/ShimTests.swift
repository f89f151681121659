@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import CBatonSystem
import Foundation
import Testing

/// `baton-shim` (Sources/baton-shim/main.c), alone and as an attempt's leader.
@Suite("Shim")
struct ShimTests {
    static let executable = ShimSetup.findExecutable()

    /// A runner whose attempts run under the shim, in a fresh directory.
    func runner() throws -> (ExecRunner, String) {
        let directory = NSTemporaryDirectory() + "baton-shims-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        var runner = ExecRunner()
        runner.shim = ShimSetup(executable: try #require(Self.executable), directory: directory)
        return (runner, directory)
    }

    func run(_ exec: [String], survives: Bool = true) async throws -> (AttemptOutcome, AttemptProbe, String) {
        let (runner, directory) = try runner()
        var action = Action(name: "t", exec: exec)
        action.survivesRestart = survives
        let probe = AttemptProbe(runner, Job(runID: 7, action: action, attempt: 2, params: [:]))
        return (await probe.outcome(), probe, directory)
    }

    @Test("the shim is the leader; the action's status, output and last error line come through it as without it")
    func relays() async throws {
        let (outcome, _, directory) = try await run(["sh", "-c", "echo out; echo 'disk full' >&2; [ \"$(cat /proc/$PPID/comm)\" = baton-shim ] || exit 9; exit 3"])
        #expect(outcome.result.error == "exited with status 3: disk full")
        let text = String(decoding: outcome.output, as: UTF8.self)
        #expect(text.contains("out\n") && text.contains("disk full\n"))
        // The attempt's directory is gone with it.
        #expect(!FileManager.default.fileExists(atPath: directory + "/7-2"))
    }

    @Test("a crash's stale directory of the same attempt (status, status.tmp, output) is emptied and the run still starts under the shim")
    func staleDirectory() async throws {
        let (runner, directory) = try runner()
        let stale = directory + "/7-2"
        try FileManager.default.createDirectory(atPath: stale, withIntermediateDirectories: true)
        for name in ["status", "status.tmp", "output"] {
            try Data("exited 5\n".utf8).write(to: URL(fileURLWithPath: stale + "/" + name))
        }
        let probe = AttemptProbe(runner, Job(runID: 7, action: Action(name: "t", exec: ["sh", "-c",
            "[ \"$(cat /proc/$PPID/comm)\" = baton-shim ] || exit 9; [ -e \(stale)/output ] && exit 8; echo fresh"]),
            attempt: 2, params: [:]))
        let outcome = await probe.outcome()
        #expect(outcome.result.succeeded, "\(outcome.result)")
        #expect(String(decoding: outcome.output, as: UTF8.self) == "fresh\n")
        #expect(!FileManager.default.fileExists(atPath: stale))
    }

    @Test("an action killed by a signal: the shim dies by the same one")
    func signal() async throws {
        let (outcome, _, _) = try await run(["sh", "-c", "kill -9 $$"])
        #expect(outcome.result.error == "killed by signal 9")
        let (term, _, _) = try await run(["sh", "-c", "kill -TERM $$"])
        #expect(term.result.error == "killed by signal 15")
    }

    @Test("progress lines pass through the shim")
    func progress() async throws {
        let (_, probe, _) = try await run(["sh", "-c", "echo '1/4 one' >&$BATON_PROGRESS_FD; echo '50% half' >&3"])
        #expect(probe.progress.map(\.message) == ["one", "half"])
    }

    @Test("a missing program fails the start with today's message, before any shim runs")
    func missing() async throws {
        let (outcome, _, _) = try await run(["/nonexistent/program"])
        #expect(!outcome.result.started)
        #expect(outcome.result.error == "cannot run /nonexistent/program: No such file or directory")
        let (inPath, _, _) = try await run(["no-such-program-anywhere"])
        #expect(inPath.result.error == "cannot run no-such-program-anywhere: No such file or directory")
    }

    @Test("a program the shim cannot execute (no shebang: ENOEXEC) fails the start, as without the shim, not the run with 127")
    func execFailure() async throws {
        let path = NSTemporaryDirectory() + "baton-noshebang-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try installExecutable("echo hi\n", at: path)
        defer { unlink(path) }
        let (outcome, _, directory) = try await run([path])
        #expect(!outcome.result.started)
        #expect(outcome.result.error == "cannot run \(path): Exec format error")
        #expect(!FileManager.default.fileExists(atPath: directory + "/7-2"))
        // A program that exits 127 itself is a run that exited 127.
        let (own, _, _) = try await run(["sh", "-c", "exit 127"])
        #expect(own.result.started && own.result.exitCode == 127)
    }

    @Test("survivesRestart: false runs the action as the leader, with no shim")
    func optOut() async throws {
        let (outcome, _, directory) = try await run(["sh", "-c", "[ \"$(cat /proc/$PPID/comm)\" = baton-shim ] && exit 9; exit 0"], survives: false)
        #expect(outcome.result.succeeded)
        #expect(!FileManager.default.fileExists(atPath: directory + "/7-2"))
    }

    @Test("a SIGTERM to the group reaches the action; the shim waits and reports how it ended")
    func stop() async throws {
        let (runner, _) = try runner()
        let probe = AttemptProbe(runner, Job(runID: 8, action: Action(name: "t", exec: ["sh", "-c", "trap 'exit 42' TERM; echo ready; while :; do sleep 0.05; done"]),
                                             attempt: 1, params: [:]))
        _ = await probe.started()
        await probe.firstOutput()   // `ready`: the trap is set
        probe.attempt.stop(grace: .seconds(5))
        let outcome = await probe.outcome()
        #expect(outcome.result.exitCode == 42)
    }
}

/// The shim alone, as a crashed batond leaves it: its pipes' readers gone.
@Suite("Shim alone", .offPool)
struct ShimAloneTests {
    static func directory() throws -> String {
        let directory = NSTemporaryDirectory() + "baton-shim-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        return directory
    }

    /// The shim running `exec` (default: `sh -c script`) in a fresh directory; `ended` is
    /// signalled once Foundation has seen it end (its status can be read then).
    /// `out` is batond's side: the reading end of the shim's stdout and stderr, close-on-exec (no
    /// process another test spawns keeps a reader of it past its exec).
    static func process(_ script: String, limit: Int, exec: [String]? = nil, ended: DispatchSemaphore? = nil) throws -> (Process, FileHandle, String) {
        let directory = try directory()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(ShimTests.executable))
        process.arguments = [directory, String(limit)] + (exec ?? ["/bin/sh", "sh", "-c", script])
        if let ended { process.terminationHandler = { _ in ended.signal() } }
        return (process, try ShimDiskTests.run(process), directory)
    }

    /// With `closeEarly`, the script waits at `cat "$0"` (a FIFO) until batond's side is gone: the
    /// first line read, the reading end closed and held by no process (as a SIGKILLed batond's is).
    func shim(_ script: String, limit: Int = 1000, closeEarly: Bool) throws -> (status: Int32, directory: String, first: String) {
        let gate = NSTemporaryDirectory() + "baton-shimgate-\(UUID().uuidString)"
        if closeEarly { #expect(mkfifo(gate, 0o600) == 0) }
        defer { unlink(gate) }
        let (process, out, directory) = try Self.process(script, limit: limit, exec: ["/bin/sh", "sh", "-c", script, gate])
        var first = [UInt8]()
        while first.last != 10, let byte = try out.read(upToCount: 1)?.first { first.append(byte) }
        if closeEarly {
            try ShimDiskTests.gone(out)
            _ = ShimDiskTests.release(process, gate)
        }
        process.waitUntilExit()
        return (process.terminationStatus, directory, String(decoding: first, as: UTF8.self))
    }

    @Test("with batond gone, the output goes to the spool, its last LIMIT bytes or more (less than twice); the status is kept")
    func spools() throws {
        let (status, directory, first) = try shim("echo first; cat \"$0\" > /dev/null; i=0; while [ $i -lt 600 ]; do echo line$i; i=$((i+1)); done; echo gone >&2; exit 4",
                                                  closeEarly: true)
        #expect(first == "first\n")
        #expect(status == 4)
        let record = ShimRecord.read(directory)
        #expect(record.exitCode == 4 && record.signal == nil)
        let text = String(decoding: record.output, as: UTF8.self)
        #expect(record.output.count >= 1000 && record.output.count < 2000)
        #expect(text.hasSuffix("line599\ngone\n"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/status.tmp"))
        ShimRecord.remove(directory)
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    @Test("with batond reading, nothing is spooled; a death by signal is recorded as one")
    func noSpool() throws {
        let (status, directory, first) = try shim("echo first; kill -KILL $$", closeEarly: false)
        #expect(first == "first\n")
        #expect(status == 9) // Process reports a signal's number as its status
        let record = ShimRecord.read(directory)
        #expect(record.signal == 9 && record.exitCode == nil)
        #expect(record.output.isEmpty)
        ShimRecord.remove(directory)
    }
}

extension ShimAloneTests {
    @Test("a spool limit over the trimming's 64 KiB buffer: the last LIMIT bytes or more, in order, are kept")
    func largeSpool() throws {
        let (status, directory, first) = try shim("echo first; cat \"$0\" > /dev/null; seq 1 60000; exit 0", limit: 100_000, closeEarly: true)
        defer { ShimRecord.remove(directory) }
        #expect(first == "first\n" && status == 0)
        let record = ShimRecord.read(directory)
        #expect(record.output.count >= 100_000 && record.output.count < 200_000)
        // Whole lines after the first (cut) one: consecutive numbers up to the last.
        let numbers = String(decoding: record.output, as: UTF8.self).split(separator: "\n").dropFirst().compactMap { Int($0) }
        #expect(numbers.last == 60000)
        #expect(numbers.count > 10_000 && numbers == Array((60001 - numbers.count)...60000))
    }

    @Test("a leftover that writes faster than batond reads does not hold the shim: it ends with its action")
    func flood() throws {
        let pidFile = NSTemporaryDirectory() + "baton-flood-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).pid"
        defer {
            let pids = (try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? ""
            for pid in pids.split(separator: "\n").compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
            unlink(pidFile)
        }
        let reaped = DispatchSemaphore(value: 0)
        let (process, out, directory) = try Self.process("for i in 1 2 3; do yes & echo $! >> \(pidFile); done; sleep 0.3; exit 3", limit: 1000,
                                                         ended: reaped)
        defer { ShimRecord.remove(directory) }
        // The shim's exit is the event its pidfd turns readable at; one that cannot be opened for
        // another reason than the shim's being gone already (reaped) fails the test.
        let exited = baton_pidfd_open(process.processIdentifier)
        let openError = exited < 0 ? errno : 0
        defer { if exited >= 0 { close(exited) } }
        guard exited >= 0 || openError == ESRCH else {
            Issue.record("pidfd_open: \(String(cString: strerror(openError)))")
            kill(process.processIdentifier, SIGKILL)
            _ = reaped.wait(timeout: .now() + 30)
            return
        }
        // batond's side: alive and reading, 512 bytes a read and a read a millisecond at most
        // (slower than three `yes` write), until the shim's exit, which wakes it at once.
        let fd = out.fileDescriptor
        var ready = [pollfd(fd: exited, events: Int16(POLLIN), revents: 0), pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        var chunk = [UInt8](repeating: 0, count: 512)
        // Bounds on the waits, not timings: a shim that waited for its leftovers would never end.
        let deadline = ContinuousClock.now + .seconds(30)
        var ended = exited < 0
        while !ended, case let left = deadline - .now, left > .zero {
            guard poll(&ready, 2, Int32(left / .milliseconds(1)) + 1) >= 0 || errno == EINTR else {
                Issue.record("poll: \(String(cString: strerror(errno)))")
                break
            }
            ended = ready[0].revents != 0
            if !ended, ready[1].revents & Int16(POLLIN) != 0 {
                _ = read(fd, &chunk, chunk.count)
                // The pace: the exit alone for a millisecond before the next read.
                var pace = [pollfd(fd: exited, events: Int16(POLLIN), revents: 0)]
                ended = poll(&pace, 1, 1) > 0
            }
            // At its end (HUP, nothing left to read) the pipe is no event any more: poll skips it.
            else if ready[1].revents != 0 { ready[1].fd = -1 }
        }
        if !ended { kill(process.processIdentifier, SIGKILL) }
        #expect(ended)
        guard reaped.wait(timeout: .now() + 30) == .success else {
            Issue.record("the shim was not reaped 30 s after its exit or kill")
            return
        }
        #expect(process.terminationStatus == 3)
        #expect(ShimRecord.read(directory).exitCode == 3)
    }

    @Test("a program it cannot execute: exit 127, a line on stderr, and the status says the exec failed and why")
    func execFailed() throws {
        let path = NSTemporaryDirectory() + "baton-noshebang-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try installExecutable("echo hi\n", at: path)
        defer { unlink(path) }
        let (process, out, directory) = try Self.process("", limit: 1000, exec: [path, "my script"])
        defer { ShimRecord.remove(directory) }
        let said = String(decoding: try out.readToEnd() ?? Data(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 127)
        #expect(said == "baton-shim: cannot run \(path): Exec format error\n")
        let record = ShimRecord.read(directory)
        #expect(record.exitCode == 127 && record.signal == nil)
        #expect(record.execFailure?.errno == ENOEXEC && record.execFailure?.program == "my script")
        #expect(record.execFailureMessage == "cannot run my script: Exec format error")
    }
}

extension ShimAloneTests {
    @Test("the status file: the first line as ever; an exec failure's line after it, its program's spaces kept")
    func statusFormat() throws {
        let directory = try Self.directory()
        defer { ShimRecord.remove(directory) }
        func record(_ status: String) throws -> ShimRecord {
            try status.write(toFile: directory + "/status", atomically: false, encoding: .utf8)
            return ShimRecord.read(directory)
        }
        let failed = try record("exit 127\nexec-failed 13 my prog\n")
        #expect(failed.exitCode == 127 && failed.execFailure?.errno == 13 && failed.execFailure?.program == "my prog")
        #expect(failed.execFailureMessage == "cannot run my prog: Permission denied")
        let plain = try record("exit 127\n")
        #expect(plain.exitCode == 127 && plain.execFailure == nil)
        let other = try record("exit 127\nsomething else 1\n")
        #expect(other.exitCode == 127 && other.execFailure == nil)
        #expect(try record("signal 9\n").signal == 9)
    }
}
