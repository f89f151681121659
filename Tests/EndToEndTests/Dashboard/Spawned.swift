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
        var outPipe: [Int32] = [0, 0], errPipe: [Int32] = [0, 0]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw DashboardError("pipe: errno \(errno)") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        for fd in outPipe + errPipe { posix_spawn_file_actions_addclose(&actions, fd) }
        let env = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        let cArgs = argv.map { strdup($0) } + [nil]
        let cEnv = env.map { strdup($0) } + [nil]
        defer { (cArgs + cEnv).forEach { free($0) } }
        var child: pid_t = 0
        let result = posix_spawn(&child, argv[0], &actions, nil, cArgs, cEnv)
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
