import BatonCore
import BatonIPC
import BatonStore
import Foundation
import Testing

/// Issue 24: a run's whole output in the history, byte for byte, bounded by `output.keep`.
@Suite("End to end: output kept", .offPool)
struct OutputTests {
    /// Every byte value, NUL, CR progress, invalid UTF-8, and a line of 200,000 bytes.
    static func awkward() -> [UInt8] {
        var bytes: [UInt8] = Array(0...255) + Array("10%\r50%\r100%\n".utf8) + [0xC3, 0x28, 0xFF, 0xFE, 0]
        bytes += (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        return bytes
    }

    /// The run's kept output by stream, read from the history file.
    static func kept(_ database: String, run: Int64) throws -> (stdout: [UInt8], stderr: [UInt8], page: OutputPage) {
        let history = try History.openReadOnly(path: database)
        let page = try #require(try history.output(of: run, maxBytes: .max))
        return (page.chunks.filter { $0.stream == .stdout }.flatMap(\.bytes), page.chunks.filter { $0.stream == .stderr }.flatMap(\.bytes), page)
    }

    @Test("stdout and stderr of every attempt round-trip exactly, with their streams, and show's tail is their end")
    func roundTrip() throws {
        let data = Self.awkward()
        let directory = NSTemporaryDirectory() + "baton-output-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(data).write(to: URL(fileURLWithPath: directory + "/data"))
        let daemon = try Daemon(config: """
            { actions: { spill: { exec: ["sh", "-c", "cat \(directory)/data; printf 'warn\\\\000\\\\377\\\\n' >&2"] } } }
            """)
        let run = try daemon.baton("run", "spill", "--json")
        #expect(run.code == 0, "\(run)")
        let kept = try Self.kept(daemon.database, run: 1)
        #expect(kept.stdout == data)
        #expect(kept.stderr == [UInt8(ascii: "w"), UInt8(ascii: "a"), UInt8(ascii: "r"), UInt8(ascii: "n"), 0, 0xFF, 10])
        #expect(kept.page.total == Int64(data.count + 7) && kept.page.dropped == 0)
        #expect(kept.page.chunks.allSatisfy { $0.bytes.count <= 64 * 1_024 })
        let show = try daemon.baton("show", "1", "--json")
        #expect(show.code == 0 && show.stdout.contains("output"), "\(show)")
    }

    @Test("past output.keep the history keeps its head and tail and counts what it dropped; keep 0 keeps none")
    func bounded() throws {
        let daemon = try Daemon(config: """
            {
              output: { keep: "64KiB" },
              actions: {
                big: { exec: ["sh", "-c", "seq 1 200000"] },
                none: { exec: ["sh", "-c", "seq 1 1000"], output: { keep: "0" } },
              }
            }
            """)
        #expect(try daemon.baton("run", "big").code == 0)
        #expect(try daemon.baton("run", "none").code == 0)
        let all = Array((1...200_000).map { "\($0)\n" }.joined().utf8)
        let big = try Self.kept(daemon.database, run: 1)
        #expect(Array(big.stdout.prefix(32 * 1_024)) == Array(all.prefix(32 * 1_024)))
        #expect(Array(big.stdout.suffix(32 * 1_024)) == Array(all.suffix(32 * 1_024)))
        #expect(big.stdout.count <= 64 * 1_024 + 64 * 1_024)
        #expect(big.page.total == Int64(all.count))
        #expect(big.page.dropped == Int64(all.count - big.stdout.count))
        let none = try Self.kept(daemon.database, run: 2)
        #expect(none.page.chunks.isEmpty && none.page.dropped == none.page.total && none.page.total > 0)
    }

    @Test("the output op over the socket: a chunk written while followed arrives before the run goes on, then the end")
    func followOverTheSocket() throws {
        let gate = try FifoGate()
        let script = gate.directory + "/talk.sh"
        try "printf 'one\\n'; cat \"$GATE\" > /dev/null; printf 'two\\377\\n' >&2\n".write(toFile: script, atomically: true, encoding: .utf8)
        let daemon = try Daemon(config: """
            { actions: { talk: { exec: ["sh", "\(script)"], env: { GATE: "\(gate.path)" } } } }
            """)
        let trigger = try Client(path: daemon.socket).call(Request(op: .trigger, action: "talk", detach: true))
        let run = try #require(trigger.run?.id)
        var chunks: [OutputChunk] = []
        let answer = try Client(path: daemon.socket).call(Request(op: .output, run: run, follow: true)) { event in
            guard let chunk = event.chunk else { return }
            chunks.append(chunk)
            // The run waits on the gate until the follower has its first line.
            if chunk.bytes.contains(UInt8(ascii: "\n")), chunks.count == 1 { gate.release() }
        }
        #expect(chunks.flatMap(\.bytes) == Array("one\n".utf8) + [UInt8(ascii: "t"), UInt8(ascii: "w"), UInt8(ascii: "o"), 0xFF, 10])
        #expect(chunks.last?.stream == .stderr)
        #expect(answer.ok == true && answer.run?.phase == .success && answer.outputEnd == 9, "\(answer)")
        // Resumed from an offset, after the end: the rest, from the history.
        let rest = try Client(path: daemon.socket).call(Request(op: .output, run: run, from: 4)) { _ in }
        #expect(rest.outputEnd == 9)
    }
}
