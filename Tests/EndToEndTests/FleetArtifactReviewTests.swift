import BatonCore
@testable import BatonFleet
import Foundation
import Glibc
import Testing

/// The review of the fleet's artifacts: names that differ only in their Unicode form, the piece
/// query's bounds, and what a publication removes after its commit.
extension FleetArtifactRowsTests {
    /// Writes `text` at `path`, the path's bytes as given (no normalization on the way).
    static func writeRaw(_ path: String, _ text: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0, "open \(path)")
        defer { close(fd) }
        let bytes = Array(text.utf8)
        #expect(bytes.withUnsafeBytes { write(fd, $0.baseAddress, bytes.count) } == bytes.count)
    }

    @Test("\"café\" precomposed and decomposed are two files: both kept, each read back with its own bytes")
    func unicodeForms() async throws {
        let (conninfo, db) = try Self.database()
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let root = dir.file("forms")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        let (composed, decomposed) = ("caf\u{E9}.txt", "cafe\u{301}.txt")
        try Self.writeRaw(root + "/" + composed, "composed\n")
        try Self.writeRaw(root + "/" + decomposed, "decomposed, longer\n")
        let scan = ArtifactScan.look(root, bound: 1 << 20)
        try #require(scan.files.count == 2, "the filesystem kept both names: \(scan.files.map(\.name))")
        let logged = Locked<[String]>([])
        await Self.keep(Self.keeper(conninfo, logged: logged), scan, run: 1)

        #expect(logged.withLock { $0 }.isEmpty, "\(logged.withLock { $0 })")
        let list = try Self.list(db, run: 1)
        #expect(Set(list.files.map { Array($0.name.utf8) }) == [Array(composed.utf8), Array(decomposed.utf8)])
        #expect(try Self.readBack(db, run: 1, name: composed, pieceBytes: 100) == Array("composed\n".utf8))
        #expect(try Self.readBack(db, run: 1, name: decomposed, pieceBytes: 100) == Array("decomposed, longer\n".utf8))
        #expect(try Self.chunks(db) == 2)
    }

    @Test("a piece's chunks are searched between both bounds of the index (a big download is not quadratic)")
    func pieceBounds() async throws {
        let (conninfo, db) = try Self.database()
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        await Self.keep(Self.keeper(conninfo), ArtifactScan.look(try ArtifactStoreFiles.directory(in: dir), bound: 10 << 20), run: 1)
        try db.execute("SET enable_seqscan = off")
        let plan = try db.query("EXPLAIN " + FleetArtifactRows.pieceSQL, ["1", "sub/deep/b.bin", String(2 << 20), "1000"],
                                planEachTime: true)
            .rows.map { $0[0] ?? "" }
        let searched = plan.filter { $0.contains("Index Cond") && $0.contains("artifact_id") }
        #expect(searched.count == 1 && searched.allSatisfy { $0.contains("start <") && $0.contains("start >") }, "\(plan.joined(separator: "\n"))")
        // The bounds cut nothing: a piece that begins inside a chunk still gets that chunk's bytes.
        let piece = try #require(try FleetArtifactRows.piece(1, named: "sub/deep/b.bin", from: (2 << 20) - 10, maxBytes: 20, on: db))
        #expect(piece.bytes == Array(ArtifactStoreFiles.binary[((2 << 20) - 10)..<((2 << 20) + 10)]))
    }

    @Test("after its publication a host removes its own unpublished rows and those it unpublished, never another host's being written")
    func removesOnlyItsOwn() async throws {
        let (_, db) = try Self.database()
        let dir = ScratchDirectory()
        defer { withExtendedLifetime(dir) {} }
        let root = dir.file("two")
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try Self.writeRaw(root + "/a.txt", "A")
        try Self.writeRaw(root + "/unread", "U")
        let files = ArtifactScan.look(root, bound: 1 << 20).files
        try #require(files.map(\.name) == ["a.txt", "unread"])
        func keep(attempt: Int) throws -> [Int64] {
            let ids = try #require(try FleetArtifactRows.begin(files, run: 1, attempt: attempt,
                                                               at: .now, incarnation: Self.me.incarnation, on: db))
            try FleetArtifactRows.writeChunk([65], of: ids[0], at: 0, on: db)
            let kept = FleetArtifactRows.Kept(id: ids[0], size: 1, sha256: try ArtifactStoreFiles.sha256sum([65]))
            return try #require(try FleetArtifactRows.publish([kept], notices: [], run: 1, attempt: attempt, incarnation: Self.me.incarnation, on: db))
        }
        try FleetArtifactRows.removeUnpublished(run: 1, unpublished: try keep(attempt: 1), incarnation: Self.me.incarnation, on: db)
        let unpublished = try keep(attempt: 2)
        #expect(unpublished.count == 1, "attempt 1's a.txt")
        // Between the commit and the removal, web-2 took the run over and began attempt 3's rows.
        try db.query("""
            INSERT INTO artifacts (run_id, attempt, name, size, sha256, type, at, incarnation)
            VALUES (1, 3, 'a3.txt', 0, '', 'text/plain', 0, $1)
            """, [Self.other.incarnation])
        try FleetArtifactRows.removeUnpublished(run: 1, unpublished: unpublished, incarnation: Self.me.incarnation, on: db)
        let left = try db.query("SELECT name, incarnation, kept FROM artifacts ORDER BY name").rows
        #expect(left == [["a.txt", Self.me.incarnation, "t"], ["a3.txt", Self.other.incarnation, "f"]], "\(left)")
    }
}
