import BatonCore
@testable import BatonStore
import Foundation
import Glibc
import Testing

/// The fleet review's questions asked of the SQLite keeper too: names that differ only in their
/// Unicode form, and a piece's chunks found without a scan from the file's first.
extension ArtifactStoreTests {
    @Test("\"café\" precomposed and decomposed are two files: both kept, each read back with its own bytes")
    func unicodeForms() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        await RetentionTests.run(store, id: 1, action: "build", phase: .success, ageDays: 0)
        let root = dir.file("forms")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let (composed, decomposed) = ("caf\u{E9}.txt", "cafe\u{301}.txt")
        for (name, text) in [(composed, "composed\n"), (decomposed, "decomposed, longer\n")] {
            let fd = open(root + "/" + name, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            try #require(fd >= 0)
            _ = text.utf8CString.withUnsafeBytes { write(fd, $0.baseAddress, text.utf8.count) }
            close(fd)
        }
        let scan = ArtifactScan.look(root, bound: 1 << 20)
        try #require(scan.files.count == 2, "the filesystem kept both names")
        await Self.keep(store, scan, run: 1)
        let list = try await store.artifacts(of: 1)
        #expect(Set(list.files.map { Array($0.name.utf8) }) == [Array(composed.utf8), Array(decomposed.utf8)])
        #expect(try await Self.readBack(store, run: 1, name: composed, pieceBytes: 100) == Array("composed\n".utf8))
        #expect(try await Self.readBack(store, run: 1, name: decomposed, pieceBytes: 100) == Array("decomposed, longer\n".utf8))
    }

    @Test("a piece's chunks are searched from the one holding its offset (both the statement and its subquery use the key's range)")
    func pieceBounds() throws {
        let dir = TemporaryDirectory()
        _ = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        let connection = try Connection(path: dir.file("h.sqlite"), readOnly: true)
        var plan: [String] = []
        try connection.withStatement("EXPLAIN QUERY PLAN " + History.pieceChunksSQL) { s in
            try s.bind([.integer(1), .integer(1), .integer(5 << 20)])
            while try s.step() { plan.append(s.string(3) ?? "") }
        }
        let searches = plan.filter { $0.contains("artifact_chunks") }
        #expect(searches.count == 2 && searches.allSatisfy { $0.hasPrefix("SEARCH") && $0.contains("start") }, "\(plan)")
        #expect(searches.contains { $0.contains("start>?") } && searches.contains { $0.contains("start<?") }, "\(plan)")
    }
}
