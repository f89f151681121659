import BatonCore
import Foundation
import Testing

/// What replaced Foundation's NSString, Process and NSLock in the product modules does what
/// they did: each table is checked against Foundation itself, which the tests still import.
@Suite("FoundationEssentials: the replacements of Foundation's path, text, process and lock calls")
struct EssentialsTests {
    static let paths = ["/a/b", "/a/b/", "/a", "/", "a", "a/b", "", "//a//b//", "/sys/fs/cgroup/baton.slice/run-1", "./x", "../a/b"]

    @Test("parentPath and baseName are NSString's deletingLastPathComponent and lastPathComponent", arguments: paths)
    func path(_ path: String) {
        #expect(path.parentPath == (path as NSString).deletingLastPathComponent)
        #expect(path.baseName == (path as NSString).lastPathComponent)
    }

    @Test("replacingEvery is Foundation's literal replacingOccurrences, scalar by scalar", arguments: [
        ("say \"hi\"", "\"", "\"\""), ("\"\u{301}quoted", "\"", "\\\""), ("a\r\nb\nc", "\n", "\\n"), ("aaa", "aa", "b"),
        ("", "x", "y"), ("back\\slash", "\\", "\\\\"), ("no match", "z", "y"), ("e\u{301}e", "e", "E"),
    ])
    func replacing(text: String, target: String, replacement: String) {
        let expected = text.replacingOccurrences(of: target, with: replacement)
        #expect(Array(text.replacingEvery(target, with: replacement).unicodeScalars) == Array(expected.unicodeScalars))
    }

    @Test("ChildProcess.run: the exit status and both streams; 128 + the signal; 127 and why when it cannot start")
    func childProcess() {
        let both = ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(both.status == 3)
        #expect(both.output == "out\nerr\n")
        #expect(ChildProcess.run("/bin/sh", ["-c", "kill -TERM $$"]).status == 128 + SIGTERM)
        let environment = ChildProcess.run("/bin/sh", ["-c", "echo \"$TZ/$HOME\""], environment: ["TZ": "UTC"])
        #expect(environment.output == "UTC/\n", "only the environment given")
        let missing = ChildProcess.run("/nonexistent/tool", [])
        #expect(missing.status == 127)
        #expect(missing.output.hasPrefix("cannot start /nonexistent/tool: No such file or directory"), "\(missing.output)")
    }

    @Test("ChildProcess.start does not wait, and false when the program cannot start")
    func childStart() throws {
        let directory = NSTemporaryDirectory() + "baton-start-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let fifo = directory + "/gate"
        #expect(mkfifo(fifo, 0o600) == 0)
        // The child blocks until the test opens the FIFO: start returning at all shows it did not wait.
        #expect(ChildProcess.start("/bin/sh", ["-c", "echo started > '\(fifo)'"]))
        let said = try String(contentsOfFile: fifo, encoding: .utf8)
        #expect(said == "started\n")
        #expect(!ChildProcess.start("/nonexistent/tool", []))
    }

    @Test("ThreadLock: increments from several threads at once are none of them lost; SystemThread runs its body")
    func lockAndThreads() {
        final class Counter: @unchecked Sendable {
            let lock = ThreadLock()
            var value = 0
        }
        let counter = Counter()
        let done = DispatchSemaphore(value: 0)
        for _ in 0..<4 {
            SystemThread.start(stackSize: 1 << 20) {
                for _ in 0..<50_000 { counter.lock.withLock { counter.value += 1 } }
                done.signal()
            }
        }
        for _ in 0..<4 { done.wait() }
        #expect(counter.lock.withLock { counter.value } == 200_000)
    }
}
