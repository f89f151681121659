import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// Artifacts in a real SQLite file: kept (names, sizes, SHA-256 against `sha256sum`, bytes read
/// back piece by piece), over the bound, replaced by a later attempt, pruned with their run, and
/// a crash mid-keep leaving none.
@Suite("Artifacts in the store", .offPool)
struct ArtifactStoreTests {
    /// 3 MiB and a bit of bytes no compressor or run-length trick makes equal by chance.
    static let binary: [UInt8] = {
        var state: UInt64 = 0x9e37_79b9_7f4a_7c15
        return (0..<(3 << 20) + 12_345).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }()

    /// A run's directory: a text file, a nested binary one, a symlink out and an empty directory.
    static func directory(in dir: TemporaryDirectory) throws -> String {
        let root = dir.file("work")
        try FileManager.default.createDirectory(atPath: root + "/sub/deep", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/empty", withIntermediateDirectories: true)
        try Data("hi\n".utf8).write(to: URL(fileURLWithPath: root + "/a.txt"))
        try Data(binary).write(to: URL(fileURLWithPath: root + "/sub/deep/b.bin"))
        try FileManager.default.createSymbolicLink(atPath: root + "/link", withDestinationPath: "/etc/passwd")
        return root
    }

    static func keep(_ store: Store, _ scan: ArtifactScan, run: Int64, attempt: Int = 1,
                     afterChunk: (@Sendable (Int) -> Void)? = nil) async {
        let keeper = StoreArtifacts(store: store, afterChunk: afterChunk)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            keeper.keep(scan, run: run, attempt: attempt) { continuation.resume() }
        }
    }

    /// The whole file, read back as a client does: piece after piece.
    static func readBack(_ store: Store, run: Int64, name: String, pieceBytes: Int) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        var from: Int64 = 0
        while let piece = try await store.artifact(of: run, named: name, from: from, maxBytes: pieceBytes) {
            #expect(piece.from == from)
            #expect(piece.bytes.count <= pieceBytes)
            bytes += piece.bytes
            guard let next = piece.next else { break }
            from = next
        }
        return bytes
    }

    /// `sha256sum`'s digest of `bytes`: a check that does not go through the code under test.
    static func sha256sum(_ bytes: [UInt8]) throws -> String {
        let dir = TemporaryDirectory()
        try Data(bytes).write(to: URL(fileURLWithPath: dir.file("f")))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        process.arguments = [dir.file("f")]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(String(decoding: out, as: UTF8.self).prefix(64))
    }

    func count(_ table: String, _ path: String) throws -> Int64 {
        try Connection(path: path, readOnly: true).scalar("SELECT count(*) FROM \(table)")?.int64 ?? -1
    }

    @Test("the regular files are kept, nested paths kept, links named not followed; read back byte-exact with sha256sum's digests")
    func kept() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        await RetentionTests.run(store, id: 1, action: "build", phase: .success, ageDays: 0)
        let scan = ArtifactScan.look(try Self.directory(in: dir), bound: 10 << 20)
        #expect(scan.files.map(\.name) == ["a.txt", "sub/deep/b.bin"])
        await Self.keep(store, scan, run: 1)

        let list = try await store.artifacts(of: 1)
        #expect(list.files.map(\.name) == ["a.txt", "sub/deep/b.bin"])
        #expect(list.files.map(\.size) == [3, Int64(Self.binary.count)])
        #expect(list.files.map(\.type) == ["text/plain; charset=utf-8", "application/octet-stream"])
        #expect(list.files[0].sha256 == (try Self.sha256sum(Array("hi\n".utf8))))
        #expect(list.files[1].sha256 == (try Self.sha256sum(Self.binary)))
        #expect(list.notices == ["link: a symlink, not followed"])
        // Pieces that cut the 1 MiB chunks anywhere, and whole chunks.
        #expect(try await Self.readBack(store, run: 1, name: "sub/deep/b.bin", pieceBytes: 700_001) == Self.binary)
        #expect(try await Self.readBack(store, run: 1, name: "sub/deep/b.bin", pieceBytes: ArtifactPiece.maxBytes) == Self.binary)
        #expect(try await Self.readBack(store, run: 1, name: "a.txt", pieceBytes: 1) == Array("hi\n".utf8))
        #expect(try await store.artifact(of: 1, named: "nope", from: 0, maxBytes: 10) == nil)
        #expect(try count("artifact_chunks", dir.file("h.sqlite")) == 5)
    }

    @Test("over the bound, none is kept and the run says how much there was")
    func overTheBound() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        await RetentionTests.run(store, id: 1, action: "build", phase: .failure, ageDays: 0)
        let scan = ArtifactScan.look(try Self.directory(in: dir), bound: 1 << 20)
        #expect(scan.files.isEmpty)
        await Self.keep(store, scan, run: 1)
        let list = try await store.artifacts(of: 1)
        #expect(list.files.isEmpty)
        #expect(list.notices == ["link: a symlink, not followed", "artifacts over 1 MiB: 3.1 MiB, none kept"])
        #expect(try count("artifact_chunks", dir.file("h.sqlite")) == 0)
    }

    @Test("a later attempt's files replace an earlier attempt's")
    func replaced() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        await RetentionTests.run(store, id: 1, action: "build", phase: .success, ageDays: 0)
        await Self.keep(store, ArtifactScan.look(try Self.directory(in: dir), bound: 10 << 20), run: 1, attempt: 1)
        let second = dir.file("second")
        try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
        try Data("two".utf8).write(to: URL(fileURLWithPath: second + "/c.json"))
        await Self.keep(store, ArtifactScan.look(second, bound: 10 << 20), run: 1, attempt: 2)
        let list = try await store.artifacts(of: 1)
        #expect(list.files.map(\.name) == ["c.json"])
        #expect(list.files.map(\.attempt) == [2])
        #expect(list.files.map(\.type) == ["application/json"])
        #expect(list.notices.isEmpty)
        #expect(try count("artifact_chunks", dir.file("h.sqlite")) == 1)
    }

    @Test("retention removes a run's artifacts with it, every chunk and notice")
    func pruned() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"), options: .init(synchronous: .off))
        await RetentionTests.run(store, id: 1, action: "build", phase: .success, ageDays: 100)
        await RetentionTests.run(store, id: 2, action: "build", phase: .success, ageDays: 1)
        let root = try Self.directory(in: dir)
        await Self.keep(store, ArtifactScan.look(root, bound: 10 << 20), run: 1)
        await Self.keep(store, ArtifactScan.look(root, bound: 10 << 20), run: 2)
        #expect(try count("artifact_chunks", dir.file("h.sqlite")) == 10)
        let retention = Retention(maxAge: .seconds(30 * 86_400), keepFailures: .seconds(365 * 86_400), maxRunsPerAction: 100)
        let report = try await store.prune(retention: retention, now: RetentionTests.now)
        #expect(report.removed == ["build": 1])
        #expect(try await store.artifacts(of: 1) == ArtifactList(run: 1))
        #expect(try await store.artifacts(of: 2).files.count == 2)
        #expect(try count("artifacts", dir.file("h.sqlite")) == 2)
        #expect(try count("artifact_chunks", dir.file("h.sqlite")) == 5)
        #expect(try count("artifact_notices", dir.file("h.sqlite")) == 1)
    }

    @Test("a crash mid-keep leaves none of that attempt's files, the earlier attempt's intact; the next start removes what it began")
    func crashMidKeep() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("h.sqlite")
        let store = try Store(path: path, options: .init(synchronous: .off))
        await RetentionTests.run(store, id: 1, action: "build", phase: .failure, ageDays: 0)
        let first = dir.file("first")
        try FileManager.default.createDirectory(atPath: first, withIntermediateDirectories: true)
        try Data("one".utf8).write(to: URL(fileURLWithPath: first + "/a.txt"))
        await Self.keep(store, ArtifactScan.look(first, bound: 10 << 20), run: 1, attempt: 1)

        // Attempt 2's keep, copied as a crash would leave the files: after its second chunk is
        // committed (the writer idle: the keeper waits for each commit), of its four.
        let crashed = dir.file("crashed")
        try FileManager.default.createDirectory(atPath: crashed, withIntermediateDirectories: true)
        let scan = ArtifactScan.look(try Self.directory(in: dir), bound: 10 << 20)
        await Self.keep(store, scan, run: 1, attempt: 2) { chunks in
            guard chunks == 2 else { return }
            for suffix in ["", "-wal"] { try? FileManager.default.copyItem(atPath: path + suffix, toPath: crashed + "/h.sqlite" + suffix) }
        }
        #expect(try await store.artifacts(of: 1).files.map(\.name) == ["a.txt", "sub/deep/b.bin"], "the keep itself went on to the end")
        store.close()

        // What the crash left: the chunks are there, unpublished; none of attempt 2 is read.
        #expect(try count("artifact_chunks", crashed + "/h.sqlite") == 3)
        let reopened = try Store(path: crashed + "/h.sqlite", options: .init(synchronous: .off))
        let left = try await reopened.artifacts(of: 1)
        #expect(left.files.map(\.name) == ["a.txt"])
        #expect(left.files.map(\.attempt) == [1])
        #expect(try await Self.readBack(reopened, run: 1, name: "a.txt", pieceBytes: 100) == Array("one".utf8))
        #expect(try await reopened.artifact(of: 1, named: "sub/deep/b.bin", from: 0, maxBytes: 10) == nil)
        // The next start's keeper removes the rows and chunks the crash left, before any keep.
        let next = StoreArtifacts(store: reopened)
        _ = next
        await reopened.ping()
        reopened.close()
        #expect(try count("artifacts", crashed + "/h.sqlite") == 1)
        #expect(try count("artifact_chunks", crashed + "/h.sqlite") == 1)
        #expect(try Connection(path: crashed + "/h.sqlite", readOnly: true).scalar("PRAGMA integrity_check")?.string == "ok")
    }

    @Test("types come from the extension, case ignored; sizes in notices round up")
    func typesAndSizes() {
        #expect(ArtifactType.of("report.HTML") == "text/html; charset=utf-8")
        #expect(ArtifactType.of("dist/app.tar.gz") == "application/gzip")
        #expect(ArtifactType.of(".hidden") == "application/octet-stream")
        #expect(ArtifactType.of("dir.d/noext") == "application/octet-stream")
        #expect(ArtifactType.of("x.png") == "image/png")
        #expect(ArtifactScan.size(100 << 20) == "100 MiB")
        #expect(ArtifactScan.size((123 << 20) - 5) == "123 MiB")
        #expect(ArtifactScan.size((3 << 20) + 1) == "3.1 MiB")
        #expect(ArtifactScan.size(1 << 10) == "1 KiB")
        #expect(ArtifactScan.size(17) == "17 bytes")
    }
}
