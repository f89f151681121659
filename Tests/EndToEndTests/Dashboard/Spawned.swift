import CBatonSystem
import Foundation

/// A child process started with posix_spawn and reaped with waitpid: Foundation's Process was
/// seen to miss child exits here (its waitUntilExit never returned after the child had died).
final class Spawned: @unchecked Sendable {
    let pid: pid_t
    /// The read ends of the child's stdout and stderr.
    let stdout: Int32
    let stderr: Int32
    private var reaped = false

    init(_ argv: [String], environment: [String: String] = [:]) throws {
        // Close-on-exec pipes, and baton_spawn closes every other descriptor in the child: a file
        // another test is writing, held open by a long-lived child, would be "busy" (ETXTBSY) to exec.
        var outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        guard baton_pipe(&outPipe) == 0, baton_pipe(&errPipe) == 0 else { throw DashboardError("pipe: errno \(errno)") }
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
            throw DashboardError("cannot start \(argv[0]): errno \(result)")
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

    /// SIGTERM, then SIGKILL after 5 s; reaps the child.
    func stop() {
        guard !reaped else { return }
        reaped = true
        kill(pid, SIGTERM)
        var status: Int32 = 0
        for _ in 0..<100 {
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
