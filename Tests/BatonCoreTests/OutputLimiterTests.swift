@testable import BatonCore
@testable import BatonEngine
import Testing

/// The keep-head-and-tail limiter and its chunking, as tables: what a run writes, when the store
/// commits, and what the history holds after (a dictionary standing in for the chunks table).
@Suite struct OutputLimiterTests {
    /// The history's chunks, applied write by write as the store does.
    struct History {
        var chunks: [Int64: OutputChunk] = [:]
        var total: Int64 = 0
        var dropped: Int64 = 0

        mutating func apply(_ write: OutputWrite) {
            if let before = write.removeBefore {
                chunks = chunks.filter { $0.value.start < write.head || $0.value.end > before }
            }
            for chunk in write.chunks { chunks[chunk.start] = chunk }
            total = write.total
            dropped = write.dropped
        }

        var ordered: [OutputChunk] { chunks.values.sorted { $0.start < $1.start } }
        var kept: [UInt8] { ordered.flatMap(\.bytes) }
        var keptCount: Int64 { Int64(kept.count) }
    }

    enum Step {
        case out(String)
        case err(String)
        /// Takes the next write (if any) and commits it.
        case commit
        /// Takes a write and holds it uncommitted.
        case take
    }

    struct Case: CustomTestStringConvertible {
        var name: String
        var keep: Int64
        var chunkSize: Int
        var steps: [Step]
        /// The history's chunks after a final write: (start, stream, text).
        var chunks: [(Int64, StandardStream, String)]
        var dropped: Int64
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "under the limit: all kept, one stream per chunk", keep: 100, chunkSize: 64,
             steps: [.out("ab"), .out("cd"), .err("E"), .out("f")],
             chunks: [(0, .stdout, "abcd"), (4, .stderr, "E"), (5, .stdout, "f")], dropped: 0),
        Case(name: "chunks end at chunkSize", keep: 100, chunkSize: 3,
             steps: [.out("abcdefg")],
             chunks: [(0, .stdout, "abc"), (3, .stdout, "def"), (6, .stdout, "g")], dropped: 0),
        Case(name: "past the limit: head and tail kept, the middle counted", keep: 6, chunkSize: 64,
             steps: [.out("0123456789")],
             chunks: [(0, .stdout, "012"), (7, .stdout, "789")], dropped: 4),
        Case(name: "the tail slides over stored chunks, which are removed whole", keep: 4, chunkSize: 2,
             steps: [.out("ab"), .commit, .out("cd"), .commit, .out("ef"), .commit, .out("gh"), .commit],
             chunks: [(0, .stdout, "ab"), (6, .stdout, "gh")], dropped: 4),
        Case(name: "a stored chunk straddling the tail's start stays whole", keep: 4, chunkSize: 4,
             steps: [.out("ab"), .commit, .out("cd"), .commit, .out("e"), .commit],
             chunks: [(0, .stdout, "ab"), (2, .stdout, "cd"), (4, .stdout, "e")], dropped: 0),
        Case(name: "what cannot be in the tail is never copied", keep: 4, chunkSize: 4,
             steps: [.out("ab"), .commit, .out("cdef")],
             chunks: [(0, .stdout, "ab"), (4, .stdout, "ef")], dropped: 2),
        Case(name: "while a write is in flight, what waits is trimmed to the tail", keep: 4, chunkSize: 64,
             steps: [.out("ab"), .take, .out("cdefghij")],
             chunks: [(0, .stdout, "ab"), (8, .stdout, "ij")], dropped: 6),
        Case(name: "keep 0 keeps nothing and counts everything", keep: 0, chunkSize: 64,
             steps: [.out("abc"), .err("de")], chunks: [], dropped: 5),
        Case(name: "the head's end splits a chunk", keep: 10, chunkSize: 64,
             steps: [.out("abcdefg")],
             chunks: [(0, .stdout, "abcde"), (5, .stdout, "fg")], dropped: 0),
        Case(name: "bytes as bytes: NUL, CR, invalid UTF-8", keep: 100, chunkSize: 64,
             steps: [.out("a\u{0}b\r\n"), .err("\u{FF}")],
             chunks: [(0, .stdout, "a\u{0}b\r\n"), (5, .stderr, "\u{FF}")], dropped: 0),
    ]

    @Test(arguments: cases)
    func table(_ c: Case) {
        var limiter = OutputLimiter(runID: 7, keep: c.keep, chunkSize: c.chunkSize)
        var history = History()
        var held: OutputWrite?
        let at = Timestamp(rawValue: 1)
        for step in c.steps {
            switch step {
            case let .out(text): _ = limiter.append(Self.bytes(text), from: .stdout, at: at)
            case let .err(text): _ = limiter.append(Self.bytes(text), from: .stderr, at: at)
            case .commit:
                if let write = limiter.write() { history.apply(write) }
                _ = limiter.committed()
            case .take: held = limiter.write()
            }
        }
        if let held { history.apply(held) }
        if let last = limiter.write(final: true) { history.apply(last) }
        let got = history.ordered.map { "\($0.start) \($0.stream) \(Self.text($0.bytes))" }
        let want = c.chunks.map { "\($0.0) \($0.1) \($0.2)" }
        #expect(got == want)
        #expect(history.dropped == c.dropped)
        #expect(history.total == history.keptCount + history.dropped)
        #expect(history.ordered.allSatisfy { $0.at == at })
    }

    /// Seeded random writes: the history holds the exact bytes at their positions, the whole head
    /// and at least the whole tail, never more than keep plus a chunk, and counts the rest.
    @Test(arguments: 0..<40)
    func randomWrites(_ seed: UInt64) {
        var rng = SplitMix(seed: seed)
        let keep = Int64(rng.next() % 200)
        let chunkSize = Int(rng.next() % 16) + 1
        var limiter = OutputLimiter(runID: 1, keep: keep, chunkSize: chunkSize)
        var history = History()
        var written: [UInt8] = []
        for _ in 0..<Int(rng.next() % 60) {
            if rng.next() % 3 == 0 {
                if let write = limiter.write() { history.apply(write) }
                _ = limiter.committed()
                continue
            }
            let bytes = (0..<Int(rng.next() % 40)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            _ = limiter.append(bytes, from: rng.next() % 2 == 0 ? .stdout : .stderr, at: .now)
            written += bytes
            #expect(limiter.pendingBytes <= Int(keep) + chunkSize)
        }
        if let write = limiter.write(final: true) { history.apply(write) }
        let total = Int64(written.count)
        #expect(history.total == total)
        #expect(history.keptCount + history.dropped == total)
        #expect(history.keptCount <= keep + Int64(chunkSize))
        for chunk in history.ordered {
            #expect(chunk.bytes.count <= chunkSize)
            #expect(Array(written[Int(chunk.start)..<Int(chunk.end)]) == chunk.bytes)
        }
        let headCount = min(total, limiter.head)
        #expect(history.ordered.filter { $0.start < limiter.head }.reduce(0) { $0 + Int64($1.bytes.count) } == headCount)
        let tailCovered = history.ordered.filter { $0.start >= limiter.head }.reduce(0) { $0 + Int64($1.bytes.count) }
        #expect(tailCovered >= total - limiter.tailStart)
    }

    @Test func aWriteIsDueOnceAChunkWaitsAndNoneWhileOneIsInFlight() {
        var limiter = OutputLimiter(runID: 1, keep: 1_000, chunkSize: 4)
        let first = limiter.append(Self.bytes("abc"), from: .stdout, at: Timestamp(rawValue: 5))
        #expect(!first)
        #expect(limiter.pendingSince == Timestamp(rawValue: 5))
        let full = limiter.append(Self.bytes("d"), from: .stdout, at: Timestamp(rawValue: 6))
        #expect(full)
        #expect(limiter.write() != nil)
        let whileInFlight = limiter.append(Self.bytes("efgh"), from: .stdout, at: Timestamp(rawValue: 7))
        #expect(!whileInFlight)
        #expect(limiter.write() == nil)
        let again = limiter.committed()
        #expect(again)
        #expect(limiter.write()?.chunks.map(\.at) == [Timestamp(rawValue: 7)])
        _ = limiter.committed()
        #expect(limiter.write() == nil)
    }

    @Test("a write carries at most four chunks (the last write all): a flood's transactions stay small; what waits is not counted dropped")
    func writesAreBounded() {
        var limiter = OutputLimiter(runID: 1, keep: 1_000, chunkSize: 4)
        _ = limiter.append(Self.bytes(String(repeating: "x", count: 40)), from: .stdout, at: Timestamp(rawValue: 1))
        _ = limiter.append(Self.bytes("yy"), from: .stdout, at: Timestamp(rawValue: 2))
        let first = limiter.write()
        #expect(first?.chunks.map(\.bytes.count) == [4, 4, 4, 4])
        #expect(first?.total == 42 && first?.dropped == 0)
        #expect(limiter.pendingSince == Timestamp(rawValue: 1))
        let more = limiter.committed()
        #expect(more)
        let second = limiter.write()
        #expect(second?.chunks.map(\.start) == [16, 20, 24, 28])
        let last = limiter.write(final: true)
        #expect(last?.chunks.map(\.start) == [32, 36, 40] && last?.dropped == 0)
        #expect(limiter.pendingSince == nil && limiter.pendingBytes == 0)
    }

    @Test("past keep no write is due from appending: only the delay hands one out")
    func pastKeepWaitsForTheDelay() {
        var limiter = OutputLimiter(runID: 1, keep: 8, chunkSize: 4)
        let inKeep = limiter.append(Self.bytes("abcd"), from: .stdout, at: Timestamp(rawValue: 1))
        #expect(inKeep && !limiter.isPastKeep)
        _ = limiter.write()
        _ = limiter.committed()
        let past = limiter.append(Self.bytes("efghijklmnop"), from: .stdout, at: Timestamp(rawValue: 2))
        #expect(!past && limiter.isPastKeep && limiter.pendingBytes >= 4)
        #expect(limiter.write() != nil)
    }

    static func text(_ bytes: [UInt8]) -> String { String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) })) }

    static func bytes(_ text: String) -> [UInt8] { text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } }
}

