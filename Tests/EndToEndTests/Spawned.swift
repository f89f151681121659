import CBatonSystem
import Foundation

/// A child process started with `baton_spawn` (stdin /dev/null, every other descriptor closed,
/// signals at their defaults) and reaped with waitpid: Foundation's Process was seen to miss
/// child exits here (its waitUntilExit never returned after the child had died, a CI run hung).
final class Spawned: @unchecked Sendable {
    let pid: pid_t
    /// The read ends of the child's stdout and stderr.
    let stdout: Int32
    let stderr: Int32
    private var reaped = false
    /// The raw status waitpid gave once `waitForExit` reaped the child (to tell an exit from a signal).
    private(set) var waitStatus: Int32 = 0

    init(_ argv: [String], environment: [String: String] = [:]) throws {
        // Close-on-exec pipes, and baton_spawn closes every other descriptor in the child: a file
        // another test is writing, held open by a long-lived child, would be "busy" (ETXTBSY) to exec.
        var outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        guard baton_pipe(&outPipe) == 0, baton_pipe(&errPipe) == 0 else { throw ExecuteError("pipe for \(argv[0]): errno \(errno)") }
        let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = env.map { strdup($0) } + [nil]
        defer { (cArgs + cEnv).forEach { free($0) } }
        var child: pid_t = 0
        let result = cArgs.map { UnsafePointer($0) }.withUnsafeBufferPointer { args in
            cEnv.map { UnsafePointer($0) }.withUnsafeBufferPointer { envp in
                baton_spawn(args.baseAddress, envp.baseAddress, nil, outPipe[1], errPipe[1], -1, &child)
            }
        }
        close(outPipe[1])
        close(errPipe[1])
        guard result == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw ExecuteError("spawning \(argv[0]): \(String(cString: strerror(result)))")
        }
        pid = child
        stdout = outPipe[0]
        stderr = errPipe[0]
    }

    deinit {
        stop()
        close(stdout)
        close(stderr)
    }

    /// Reads stdout until `done` holds for what came, or it ends; returns what came.
    func readStdout(until done: (String) -> Bool) -> String {
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !done(text) {
            let n = buffer.withUnsafeMutableBytes { read(stdout, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            text += String(decoding: buffer[..<n], as: UTF8.self)
        }
        return text
    }

    /// Reads stderr until `done` holds for what came, it ends, or `timeout` passes; returns what came.
    func readStderr(timeout: Duration = .seconds(20), until done: (String) -> Bool) -> String {
        let end = ContinuousClock.now + timeout
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !done(text), case let left = end - .now, left > .zero {
            var pfd = pollfd(fd: stderr, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(left.components.seconds * 1_000 + 1)) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(stderr, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            text += String(decoding: buffer[..<n], as: UTF8.self)
        }
        return text
    }

    /// What stderr has now, without waiting.
    func availableStderr() -> String {
        var pfd = pollfd(fd: stderr, events: Int16(POLLIN), revents: 0)
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while poll(&pfd, 1, 0) > 0 {
            let n = buffer.withUnsafeMutableBytes { read(stderr, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            text += String(decoding: buffer[..<n], as: UTF8.self)
        }
        return text
    }

    /// Reads stdout and stderr to their ends together (a child that fills one while the other
    /// is read would wait for ever), then reaps the child. A child still running `within` seconds
    /// on (a hang: no test waits that long for one command) is killed, and its stderr ends with
    /// a line that says so; what holds its pipes after that is given 5 s, then left.
    func waitForExit(within seconds: Double = 600) -> Output {
        var data: [[UInt8]] = [[], []]
        var fds = [pollfd(fd: stdout, events: Int16(POLLIN), revents: 0), pollfd(fd: stderr, events: Int16(POLLIN), revents: 0)]
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var deadline = ContinuousClock.now + .seconds(seconds), killed = false
        while fds.contains(where: { $0.fd >= 0 }) {
            let left = deadline - .now
            if left <= .zero {
                if killed { break }
                kill(pid, SIGKILL)
                (killed, deadline) = (true, .now + .seconds(5))
                data[1] += Array("\n[test harness: still running after \(seconds) s: killed]\n".utf8)
                continue
            }
            if poll(&fds, 2, Int32(left / .milliseconds(1)) + 1) < 0 { if errno == EINTR { continue } else { break } }
            for index in 0..<2 where fds[index].fd >= 0 && fds[index].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[index].fd, $0.baseAddress, $0.count) }
                if n > 0 { data[index] += buffer[0..<n] } else if n == 0 || errno != EINTR { fds[index].fd = -1 }
            }
        }
        reaped = true
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        waitStatus = status
        // As `Process.terminationStatus` says it: the exit code, or the signal that ended it.
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
        return Output(code: code, stdout: String(decoding: data[0], as: UTF8.self), stderr: String(decoding: data[1], as: UTF8.self))
    }

    /// SIGTERM, then SIGKILL if it has not exited 5 s later; reaps the child.
    func stop() {
        guard !reaped else { return }
        reaped = true
        let exited = baton_pidfd_open(pid)   // readable once the child has exited
        defer { if exited >= 0 { close(exited) } }
        kill(pid, SIGTERM)
        var status: Int32 = 0
        if exited >= 0 {
            var ready = pollfd(fd: exited, events: Int16(POLLIN), revents: 0)
            while poll(&ready, 1, 5_000) < 0 && errno == EINTR {}
        }
        if waitpid(pid, &status, WNOHANG) == pid { return }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
