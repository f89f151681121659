import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// A run's output in SQLite: chunks written as the limiter hands them out, read back from an
/// offset byte for byte, tail chunks removed as the window slides, and removed with the run.
@Suite("Output in the store")
struct OutputStoreTests {
    static let now = Timestamp.now

    /// Every byte value, NUL, CR, invalid UTF-8 and a long line without a newline.
    static let awkward: [UInt8] = Array(0...255) + [0, 13, 13, 10, 0xC3, 0x28, 0xFF] + Array(repeating: UInt8(ascii: "x"), count: 100_000)

    static func write(_ store: Store, _ entries: [JournalEntry]) throws {
        #expect(StoreWriterTests.Answer(store, entries).value.map { (try? $0.get()) != nil } == true)
    }

    static func limited(_ run: Int64, keep: Int64, chunkSize: Int = 64 * 1_024, _ parts: [(StandardStream, [UInt8])]) -> [OutputWrite] {
        var limiter = OutputLimiter(runID: run, keep: keep, chunkSize: chunkSize)
        var writes: [OutputWrite] = []
        for (stream, bytes) in parts {
            _ = limiter.append(bytes, from: stream, at: now)
            if let write = limiter.write() { writes.append(write) }
            _ = limiter.committed()
        }
        return writes
    }

    @Test("bytes round-trip exactly, in order, with their streams, from any offset")
    func roundTrip() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        try Self.write(store, [StoreWriterTests.created(1)])
        let parts: [(StandardStream, [UInt8])] = [(.stdout, Self.awkward), (.stderr, [1, 2, 3]), (.stdout, [0, 0])]
        try Self.write(store, Self.limited(1, keep: 1 << 20, parts).map { .outputChunks($0) })
        let page = try #require(try await store.read { try $0.output(of: 1) })
        #expect(page.chunks.flatMap(\.bytes) == Self.awkward + [1, 2, 3, 0, 0])
        #expect(page.chunks.map(\.stream).last == .stdout)
        #expect(page.chunks.contains { $0.stream == .stderr && $0.bytes == [1, 2, 3] })
        #expect(page.total == Int64(Self.awkward.count + 5) && page.dropped == 0)
        let later = try #require(try await store.read { try $0.output(of: 1, from: 70_000) })
        #expect(later.chunks.first?.start == 70_000)
        #expect(later.chunks.flatMap(\.bytes) == Array((Self.awkward + [1, 2, 3, 0, 0])[70_000...]))
        let detail = try #require(try await store.run(1))
        #expect(detail.output.map(Array.init) == Array((Self.awkward + [1, 2, 3, 0, 0]).suffix(64 * 1_024)))
        #expect(detail.outputTruncated)
    }

    @Test("past keep, the history holds the head and the tail, at most keep and a chunk, and counts the dropped bytes")
    func bounded() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        try Self.write(store, [StoreWriterTests.created(1)])
        let all = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let parts = stride(from: 0, to: all.count, by: 1_000).map { (StandardStream.stdout, Array(all[$0..<min($0 + 1_000, all.count)])) }
        try Self.write(store, Self.limited(1, keep: 10_000, chunkSize: 1_024, parts).map { .outputChunks($0) })
        let page = try #require(try await store.read { try $0.output(of: 1) })
        let kept = page.chunks.flatMap(\.bytes)
        #expect(kept.count <= 10_000 + 1_024)
        #expect(Array(kept.prefix(5_000)) == Array(all.prefix(5_000)))
        #expect(Array(kept.suffix(5_000)) == Array(all.suffix(5_000)))
        #expect(page.dropped == Int64(all.count - kept.count))
        let stored = try await store.read { history in
            try history.connection.scalar("SELECT sum(length(bytes)) FROM output_chunks WHERE run_id = 1")?.int64 ?? 0
        }
        #expect(stored == Int64(kept.count))
    }

    @Test("a run's output goes with the run")
    func removedWithTheRun() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        try Self.write(store, [StoreWriterTests.created(1)])
        try Self.write(store, Self.limited(1, keep: 100, [(.stdout, [1, 2, 3])]).map { .outputChunks($0) })
        _ = try await store.perform { connection in try connection.execute("DELETE FROM runs WHERE id = 1") }
        let left = try await store.read { history in
            (try history.connection.scalar("SELECT count(*) FROM output_chunks")?.int64 ?? -1)
                + (try history.connection.scalar("SELECT count(*) FROM output_totals")?.int64 ?? -1)
        }
        #expect(left == 0)
    }
}
