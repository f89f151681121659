import BatonCore
import CBatonSystem
import Foundation
import Testing

/// The built binaries, next to the test bundle.
enum Binaries {
    static let directory: URL = {
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if FileManager.default.fileExists(atPath: here.appendingPathComponent("batond").path) { return here }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug").standardizedFileURL
    }()
    static var batond: String { directory.appendingPathComponent("batond").path }
    static var baton: String { directory.appendingPathComponent("baton").path }
}

/// The result of running a command.
/// Runs blocking work (a child process, a build, a boot) on a thread of its own and waits for it
/// without holding one of the few threads Swift's concurrency runs every async test on: a long
/// synchronous test there starves the others for as long as it blocks.
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// A command started on a thread of its own at once, whatever the pool is doing: `async let` of
/// `run` starts only when a pool thread is free, which on a loaded machine can be minutes after
/// the test meant it to (a debounce burst then missed its window).
final class Launched: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<Output, Error>?  // written before `done` is signalled, read after

    init(_ path: String, _ arguments: [String], environment: [String: String] = [:]) {
        Thread.detachNewThread { [self] in
            result = Result { try execute(path, arguments, environment: environment) }
            done.signal()
        }
    }

    /// The command's output once it has ended.
    func output() async throws -> Output {
        try await offPool { [self] in
            done.wait()
            done.signal()
            return try result!.get()
        }
    }
}

/// `execute`, off the pool.
func run(_ path: String, _ arguments: [String], environment: [String: String] = [:]) async throws -> Output {
    try await offPool { try execute(path, arguments, environment: environment) }
}

struct Output: Sendable {
    var code: Int32
    var stdout: String
    var stderr: String
}

/// Runs a program to its end and captures its output. Spawned with `baton_spawn` (stdin
/// /dev/null, every other descriptor closed, signals at their defaults, as `Spawned` starts its
/// children) and reaped with `waitpid` on its pid, not by `Foundation.Process`: a CI run hung for
/// good in `Process.waitUntilExit` on a `baton show` that had exited and that nothing reaped.
func execute(_ path: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Output {
    var env = ProcessInfo.processInfo.environment
    env["NO_COLOR"] = "1"
    for (key, value) in environment { env[key] = value }
    var stdout: [Int32] = [-1, -1], stderr: [Int32] = [-1, -1]
    guard baton_pipe(&stdout) == 0 else { throw ExecuteError("pipe for \(path): errno \(errno)") }
    guard baton_pipe(&stderr) == 0 else {
        close(stdout[0]); close(stdout[1])
        throw ExecuteError("pipe for \(path): errno \(errno)")
    }
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    let envp = env.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = argv.map { UnsafePointer($0) }.withUnsafeBufferPointer { args in
        envp.map { UnsafePointer($0) }.withUnsafeBufferPointer { envs in
            baton_spawn(args.baseAddress, envs.baseAddress, nil, stdout[1], stderr[1], -1, &pid)
        }
    }
    close(stdout[1])
    close(stderr[1])
    guard spawned == 0 else {
        close(stdout[0]); close(stderr[0])
        throw ExecuteError("spawning \(path): \(String(cString: strerror(spawned)))")
    }
    let (out, err) = readBoth(stdout[0], stderr[0])
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    // As `Process.terminationStatus` says it: the exit code, or the signal that ended it.
    let code = status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    return Output(code: code, stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
}

struct ExecuteError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Reads two pipes to their ends at once (a child that fills one while the other is read would
/// wait for ever), then closes them.
private func readBoth(_ first: Int32, _ second: Int32) -> ([UInt8], [UInt8]) {
    var data: [[UInt8]] = [[], []]
    var fds = [pollfd(fd: first, events: Int16(POLLIN), revents: 0), pollfd(fd: second, events: Int16(POLLIN), revents: 0)]
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while fds.contains(where: { $0.fd >= 0 }) {
        if poll(&fds, 2, -1) < 0 { if errno == EINTR { continue } else { break } }
        for index in 0..<2 where fds[index].fd >= 0 && fds[index].revents != 0 {
            let n = buffer.withUnsafeMutableBytes { read(fds[index].fd, $0.baseAddress, $0.count) }
            if n > 0 { data[index] += buffer[0..<n] } else if n == 0 || errno != EINTR { close(fds[index].fd); fds[index].fd = -1 }
        }
    }
    return (data[0], data[1])
}

/// A real batond on a temporary socket and database, started on a config text and stopped at the end.
final class Daemon: @unchecked Sendable {
    let directory: String
    let socket: String
    let database: String
    let configPath: String
    let binary: String
    let process = Process()
    private let stderrPipe = Pipe()
    /// Everything batond wrote to stderr so far.
    private let output = LogBuffer()
    /// Signalled once batond has exited (its terminationHandler).
    private let exited = DispatchSemaphore(value: 0)

    /// Extra environment variables of batond.
    var environment: [String: String] = [:]
    /// A command that execs batond (`ip netns exec NS`), or nothing.
    var launcher: [String] = []

    init(config: String, database: String? = nil, environment: [String: String] = [:], launcher: [String] = []) throws {
        self.environment = environment
        self.launcher = launcher
        directory = NSTemporaryDirectory() + "baton-e2e-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socket = directory + "/baton.sock"
        self.database = database ?? directory + "/history.sqlite"
        configPath = directory + "/baton.json5"
        binary = Binaries.batond
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        try start()
    }

    /// A daemon on another daemon's socket and database (that one is stopped), with a new config.
    init(config: String, reusing other: Daemon, name: String = "second") throws {
        directory = other.directory + "/" + name
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socket = other.socket
        database = other.database
        configPath = directory + "/baton.json5"
        binary = Binaries.batond
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        try start()
    }

    /// A daemon from another binary, with its files in `directory`.
    init(binary: String, configPath: String, directory: String) throws {
        self.directory = directory
        socket = directory + "/baton.sock"
        database = directory + "/history.sqlite"
        self.configPath = configPath
        self.binary = binary
        try start()
    }

    func start() throws {
        process.executableURL = URL(fileURLWithPath: launcher.first ?? binary)
        process.arguments = launcher.dropFirst() + (launcher.isEmpty ? [] : [binary]) + ["--config", configPath, "--socket", socket, "--database", database]
        var env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        // A batond that traps (twice seen killed by a signal with an empty stderr under load)
        // prints its backtrace to the stderr the failure shows.
        if env["SWIFT_BACKTRACE"] == nil { env["SWIFT_BACKTRACE"] = "enable=yes,interactive=no,color=no,output-to=stderr" }
        process.environment = env
        process.standardError = stderrPipe
        process.standardOutput = FileHandle.nullDevice
        let exited = exited
        process.terminationHandler = { _ in exited.signal() }
        try process.run()
        // A thread of its own reads batond's stderr with plain read(2) until EOF. (Foundation's
        // readabilityHandler was seen to stop draining and spin once many pipes had come and gone,
        // leaving batond blocked writing its log and never exiting.)
        try? stderrPipe.fileHandleForWriting.close()
        let pipe = stderrPipe, output = output
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
        try waitForLog("ready")
    }

    /// Waits until batond's stderr contains `text` (`count` times), or it exits, or 30 s pass.
    func waitForLog(_ text: String, count: Int = 1) throws {
        let deadline = Date().addingTimeInterval(30)
        let lock = output.lock
        lock.lock()
        defer { lock.unlock() }
        func seen() -> Bool { output.text.components(separatedBy: text).count > count }
        while !seen() {
            if !process.isRunning && !seen() { throw DaemonError.exited(endedHow() + "; its stderr: " + output.text) }
            if !lock.wait(until: min(deadline, Date().addingTimeInterval(0.2))) && Date() > deadline { throw DaemonError.timeout(output.text) }
        }
    }

    /// How batond ended, for a test that finds it gone: a signal nobody in the test sent (SIGKILL
    /// with nothing on stderr) points at a stale pid or process group killed elsewhere.
    private func endedHow() -> String {
        process.waitUntilExit()
        let status = process.terminationStatus
        return process.terminationReason == .uncaughtSignal ? "batond (pid \(process.processIdentifier)) was killed by signal \(status)"
            : "batond (pid \(process.processIdentifier)) exited with status \(status)"
    }

    var stderr: String {
        output.lock.lock()
        defer { output.lock.unlock() }
        return output.text
    }

    /// Runs the CLI against this daemon.
    func baton(_ arguments: String...) throws -> Output {
        try execute(Binaries.baton, ["--socket", socket] + arguments)
    }

    /// Kills batond with SIGKILL, as a crash would, and waits for it to be gone.
    func crash() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Sends a signal to batond.
    func signal(_ number: Int32) {
        kill(process.processIdentifier, number)
    }

    /// Waits for batond to exit, at most `seconds`: its exit status, or nil if it still runs.
    func waitForExit(within seconds: Double) -> Int32? {
        guard exited.wait(timeout: .now() + seconds) == .success else { return nil }
        exited.signal()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Waits for batond to exit and returns its exit status.
    func waitForExit() -> Int32 {
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGTERM, then SIGKILL if batond has not exited within 30 s (a test that hangs here would
    /// hang the whole suite; the kill shows up as a failed expectation instead).
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        if exited.wait(timeout: .now() + 30) == .timedOut {
            Issue.record("batond did not exit within 30 s of SIGTERM; killed. Its log ends: \(stderr.suffix(2_000))")
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    enum DaemonError: Error {
        case exited(String)
        case timeout(String)
    }
}

/// What batond wrote to stderr, appended by the reader thread; `text` is guarded by `lock`.
final class LogBuffer: @unchecked Sendable {
    let lock = NSCondition()
    var text = ""

    func append(_ bytes: ArraySlice<UInt8>) {
        lock.lock()
        text += String(decoding: bytes, as: UTF8.self)
        lock.broadcast()
        lock.unlock()
    }
}
