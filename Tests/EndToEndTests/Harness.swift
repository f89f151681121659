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
/// synchronous test there starves the others for as long as it blocks. (Not the `.offPool` trait,
/// which runs a whole suite's tests off the pool: this one body, on a thread made for it, wherever
/// it is called.)
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// A command started on a thread of its own at once, whatever the pool is doing: `async let` of
/// `run` on the pool starts only when a pool thread is free, which on a loaded machine was minutes
/// after the test meant it to (a debounce burst then missed its window). In an `.offPool` suite
/// an `async let` starts on a thread of its own too; this one does wherever it is called.
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
        try await onThread { [self] in
            done.wait()
            done.signal()
            return try result!.get()
        }
    }
}

/// `execute`, off the pool.
func run(_ path: String, _ arguments: [String], environment: [String: String] = [:], within seconds: Double = 600) async throws -> Output {
    try await onThread { try execute(path, arguments, environment: environment, within: seconds) }
}

/// How long a build a test runs may take (a cold build on a busy 2-core machine) before it is killed.
let buildLimit: Double = 3_600

struct Output: Sendable {
    var code: Int32
    var stdout: String
    var stderr: String
}

/// Runs a program to its end and captures its output, as a `Spawned` child (not
/// `Foundation.Process`: a CI run hung for good in `Process.waitUntilExit` on a `baton show` that
/// had exited and that nothing reaped).
func execute(_ path: String, _ arguments: [String], environment: [String: String] = [:], within seconds: Double = 600) throws -> Output {
    try Spawned([path] + arguments, environment: ["NO_COLOR": "1"].merging(environment) { $1 }).waitForExit(within: seconds)
}

struct ExecuteError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
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
    init(config: String, reusing other: Daemon, name: String = "second", environment: [String: String] = [:]) throws {
        self.environment = environment
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

    /// The runtime directory a daemon gets when the test gives none: none, or with
    /// BATON_TEST_RUNTIME_DIRECTORY=1 one beside its database, safe as the service's (0700, this user's).
    static func runtimeDirectory(beside database: String) -> String? {
        guard ProcessInfo.processInfo.environment["BATON_TEST_RUNTIME_DIRECTORY"] == "1" else { return nil }
        let runtime = database.parentPath + "/runtime"
        _ = mkdir(runtime, 0o700)
        return runtime
    }

    func start() throws {
        process.executableURL = URL(fileURLWithPath: launcher.first ?? binary)
        process.arguments = launcher.dropFirst() + (launcher.isEmpty ? [] : [binary]) + ["--config", configPath, "--socket", socket, "--database", database]
        var env = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        // The shims' attempt directories beside the test's database (or under /run/baton where that is
        // safe), not under a runtime directory the test runner inherited from systemd, unless the test sets one.
        // BATON_TEST_RUNTIME_DIRECTORY=1 (scripts/test's pass of the hand-over suites): the service's
        // layout instead, a runtime directory (0700, beside the database, kept by the daemon that reuses it).
        if environment["RUNTIME_DIRECTORY"] == nil { env["RUNTIME_DIRECTORY"] = Self.runtimeDirectory(beside: database) }
        // A batond that traps (twice seen killed by a signal with an empty stderr under load)
        // prints its backtrace to the stderr the failure shows.
        // "stderr": batond's stderr is the journal's stream (its device:inode), as under systemd.
        if env["JOURNAL_STREAM"] == "stderr" {
            var info = stat()
            if fstat(stderrPipe.fileHandleForWriting.fileDescriptor, &info) == 0 { env["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)" }
        }
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

    var stderr: String { output.current }

    /// Runs the CLI against this daemon.
    func baton(_ arguments: String...) throws -> Output {
        try execute(Binaries.baton, ["--socket", socket] + arguments)
    }

    /// Kills batond with SIGKILL, as a crash would, and waits for it to be gone.
    func crash() {
        guard process.isRunning else { return }
        _ = kill9()
    }

    /// SIGKILL, then batond's status once its exit is seen (at most 60 s: Foundation's Process was
    /// seen to miss an exit, so no unbounded `waitUntilExit`; else an issue, and -1).
    private func kill9() -> Int32 {
        kill(process.processIdentifier, SIGKILL)
        if let status = waitForExit(within: 60) { return status }
        Issue.record("batond (pid \(process.processIdentifier)) not seen to exit within 60 s of SIGKILL")
        return -1
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

    /// Waits for batond to exit and returns its exit status; one still running 120 s on (a stop
    /// that hangs) is recorded as an issue and killed, rather than hang the whole suite.
    func waitForExit() -> Int32 {
        if let status = waitForExit(within: 120) { return status }
        Issue.record("batond did not exit within 120 s; killed. Its log ends: \(stderr.suffix(2_000))")
        return kill9()
    }

    /// SIGTERM, then SIGKILL if batond has not exited within 30 s (a test that hangs here would
    /// hang the whole suite; the kill shows up as a failed expectation instead).
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        if exited.wait(timeout: .now() + 30) == .timedOut {
            Issue.record("batond did not exit within 30 s of SIGTERM; killed. Its log ends: \(stderr.suffix(2_000))")
            _ = kill9()
        }
    }

    deinit {
        stop()
        // SIGTERM leaves the runs that survive restarts to their shims, for a next batond: what a
        // test left of them (its actions tagged with this database) goes with the test.
        _ = TaggedProcesses.killUntilGone(instance: database, runs: nil)
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

    /// `text` now, read under the lock (the reader thread appends meanwhile).
    var current: String {
        lock.lock()
        defer { lock.unlock() }
        return text
    }
}

/// Puts an executable at `path` (mode 0755) holding `text`, or a copy of `source`, whose file only
/// install(1), a child, ever had open for writing. A file this process wrote could be inherited,
/// still open for writing, by a child another test forks at that moment, and exec of it fails
/// with "Text file busy" (ETXTBSY) until that child execs or exits.
func installExecutable(_ text: String? = nil, copying source: String? = nil, at path: String) throws {
    var from = source ?? ""
    if let text {
        from = path + ".text"
        try text.write(toFile: from, atomically: false, encoding: .utf8)
    }
    defer { if text != nil { unlink(from) } }
    let result = try execute("/usr/bin/install", ["-m", "755", from, path])
    guard result.code == 0 else { throw ExecuteError("install \(from) \(path): \(result.stderr)") }
}
