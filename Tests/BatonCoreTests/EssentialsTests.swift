import BatonCore
import Foundation
import Testing

/// What replaced Foundation's NSString, Process and NSLock in the product modules does what
/// they did: each table is checked against Foundation itself, which the tests still import.
@Suite("FoundationEssentials: the replacements of Foundation's path, text, process and lock calls", .offPool)
struct EssentialsTests {
    static let paths = ["/a/b", "/a/b/", "/a", "/", "a/b", "", "/sys/fs/cgroup/baton.slice/run-1", "./x", "../a/b"]

    @Test("parentPath and baseName are NSString's deletingLastPathComponent and lastPathComponent", arguments: paths)
    func path(_ path: String) {
        #expect(path.parentPath == (path as NSString).deletingLastPathComponent)
        #expect(path.baseName == (path as NSString).lastPathComponent)
    }

    /// NSString traps on a name without a slash (Foundation's `_startOfLastPathComponent`, Swift
    /// 6.3.1): `Paths.ensureParent(of: "history.sqlite")` stopped batond. Here it has no parent.
    @Test("a name without a slash has an empty parent and is its own last component")
    func bareName() {
        #expect("history.sqlite".parentPath == "")
        #expect("history.sqlite".baseName == "history.sqlite")
    }

    @Test("replacingEvery is Foundation's replacingOccurrences where a match stands alone", arguments: [
        ("say \"hi\"", "\"", "\"\""), ("a\r\nb\nc", "\n", "\\n"), ("aaa", "aa", "b"),
        ("", "x", "y"), ("back\\slash", "\\", "\\\\"), ("no match", "z", "y"), ("50% of $HOME", "%", "%%"),
    ])
    func replacing(text: String, target: String, replacement: String) {
        let expected = text.replacingOccurrences(of: target, with: replacement)
        #expect(Array(text.replacingEvery(target, with: replacement).unicodeScalars) == Array(expected.unicodeScalars))
    }

    /// Foundation skips a match that a combining mark follows (the two are one Character): a CSV
    /// field or a unit's quoted word kept a bare quote. replacingEvery escapes it.
    @Test("a quote followed by a combining mark is escaped too, where Foundation left it")
    func combiningMark() {
        let text = "\"\u{301}quoted"
        #expect(text.replacingOccurrences(of: "\"", with: "\"\"") == text, "Foundation's behaviour, which this replaces")
        #expect(Array(text.replacingEvery("\"", with: "\"\"").unicodeScalars) == Array("\"\"\u{301}quoted".unicodeScalars))
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
        let reader = open(fifo, O_RDONLY)
        #expect(reader >= 0)
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = read(reader, &bytes, bytes.count)
        close(reader)
        #expect(count > 0 && String(decoding: bytes[..<max(count, 0)], as: UTF8.self) == "started\n")
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
