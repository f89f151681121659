import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// A helper program run to its end for what it says (`systemd-analyze`, `systemctl`), through
/// the same posix_spawn as an action: stdin from /dev/null, both streams into one pipe.
public enum ChildProcess {
    /// Runs `path` with `arguments` in `environment` (nil: this process's own) and waits for it:
    /// its exit status (128 + the signal that ended it) and what it wrote; 127 and why when it
    /// could not start.
    public static func run(_ path: String, _ arguments: [String],
                           environment: [String: String]? = nil) -> (status: Int32, output: String) {
        var ends: [Int32] = [-1, -1]
        guard baton_pipe(&ends) == 0 else { return (127, "cannot start \(path): \(String(cString: strerror(errno)))") }
        let env = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let failed = withCStrings([path] + arguments) { argv in
            withCStrings(env) { envp in baton_spawn(argv, envp, nil, ends[1], ends[1], -1, &pid) }
        }
        close(ends[1])
        defer { close(ends[0]) }
        guard failed == 0 else { return (127, "cannot start \(path): \(String(cString: strerror(failed)))") }
        let output = readToEnd(ends[0])
        return (waitForExit(pid), String(decoding: output, as: UTF8.self))
    }

    /// Starts `path` with `arguments` and this process's environment, its output and errors to
    /// /dev/null, without waiting (a browser); a thread reaps it when it ends. False when it could
    /// not start.
    public static func start(_ path: String, _ arguments: [String]) -> Bool {
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { if null >= 0 { close(null) } }
        let env = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let failed = withCStrings([path] + arguments) { argv in
            withCStrings(env) { envp in baton_spawn(argv, envp, nil, null, null, -1, &pid) }
        }
        guard null >= 0, failed == 0 else { return false }
        let child = pid
        SystemThread.start { _ = waitForExit(child) }
        return true
    }

    private static func readToEnd(_ fd: Int32) -> [UInt8] {
        var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 { bytes += buffer[..<count]; continue }
            if count < 0 && errno == EINTR { continue }
            return bytes
        }
    }

    private static func waitForExit(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return 127 }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}
