import Foundation
import Testing

/// No effect is performed while a lock is held, anywhere in `Sources/`: inside a `withLock`
/// closure, no spawn, reap, accept, read or write of a descriptor, close, sleep, wait, SQLite
/// step or query, and no write to stdout or stderr. Such a call holds every other thread that
/// wants the lock for as long as the kernel takes (a spawn under a lock once held the loop for
/// 11 ms). A finding names the file, the line of its `withLock` and the call.
@Suite("Layout: no effect under a lock")
struct EffectsUnderLockTests {
    /// The calls that are effects: C calls not qualified by a value (`queue.close()` is not one),
    /// anything through `Glibc.`, the SQLite and spawn shims, a statement's step, a query, a wait.
    static let effect = try! NSRegularExpression(pattern: #"""
        (?<![.\w])(close|write|read|send|recv|accept|accept4|open|unlink|rmdir|mkdir|kill|waitpid|waitid|fsync|fdatasync|usleep|sleep|posix_spawn|vfork|execve)\(|Glibc\.\w+\(|sqlite3_\w+\(|\.step\(\)|\.query\(|\.wait\(|Stdio\.\w+\.write\(|baton_(spawn|reap|accept|waitable)\w*\(|Self\.spawn\(
        """#)

    /// Each `withLock` closure's body in `text` (comments and string literals blanked), with its line.
    static func lockedBodies(_ text: String) -> [(line: Int, body: String)] {
        let characters = Array(text)
        let opening = try! NSRegularExpression(pattern: #"withLock\s*(\(\s*)?\{"#)
        var bodies: [(Int, String)] = []
        for match in opening.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            let start = text.distance(from: text.startIndex, to: Range(match.range, in: text)!.upperBound)
            var (index, depth) = (start, 1)
            while depth > 0 && index < characters.count {
                if characters[index] == "{" { depth += 1 } else if characters[index] == "}" { depth -= 1 }
                index += 1
            }
            let line = characters[..<start].count { $0 == "\n" } + 1
            bodies.append((line, blankCommentsAndStrings(String(characters[start..<max(start, index - 1)]))))
        }
        return bodies
    }

    static func blankCommentsAndStrings(_ text: String) -> String {
        let comments = try! NSRegularExpression(pattern: #"//[^\n]*"#)
        let strings = try! NSRegularExpression(pattern: #""(\\.|[^"\\\n])*""#)
        var result = comments.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "")
        result = strings.stringByReplacingMatches(in: result, range: NSRange(result.startIndex..., in: result), withTemplate: "\"\"")
        return result
    }

    /// The effects found in `text`, as `line: call`.
    static func findings(in text: String) -> [String] {
        lockedBodies(text).flatMap { line, body in
            effect.matches(in: body, range: NSRange(body.startIndex..., in: body)).map { "\(line): \(String(body[Range($0.range, in: body)!]))" }
        }
    }

    @Test("no withLock closure in Sources/ performs an effect")
    func sources() throws {
        let root = LayoutTests.sources
        let walker = try #require(FileManager.default.enumerator(atPath: root.path))
        var all: [String] = []
        var files = 0
        for case let path as String in walker where path.hasSuffix(".swift") {
            files += 1
            let text = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
            all += Self.findings(in: text).map { "\(path):\($0)" }
        }
        #expect(files > 100, "only \(files) source files found under \(root.path)")
        #expect(all.isEmpty, "effects under a lock:\n\(all.joined(separator: "\n"))")
    }

    @Test("the scan finds an effect in a lock, nested or not, and ignores comments, strings and methods of values",
          arguments: [
              ("state.withLock { $0.pid = pid; close(fd) }", ["1: close("]),
              ("leaders.withLock { leaders in\n  if x { _ = posix_spawn(&pid, a, b, c, d, e) }\n}", ["1: posix_spawn("]),
              ("x.withLock({ Glibc.write(fd, p, n) })", ["1: Glibc.write("]),
              ("a.withLock { s in try s.step() }", ["1: .step()"]),
              ("a.withLock { $0.queue.close() } // close(fd)", []),
              ("a.withLock { $0.text = \"close(fd)\" }", []),
              ("a.withLock { $0.count += 1 }\nclose(fd)", []),
          ] as [(String, [String])])
    func scan(text: String, expected: [String]) {
        #expect(Self.findings(in: text) == expected)
    }
}
