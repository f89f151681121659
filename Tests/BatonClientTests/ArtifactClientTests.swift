import BatonClient
import BatonCore
import Foundation
import Testing

/// Reading an artifact piece by piece: every piece must be of the same file (its SHA-256 and attempt).
@Suite("BatonClient reading an artifact")
struct ArtifactClientTests {
    static func piece(_ request: Request?, sha: String, attempt: Int, from: Int64, _ bytes: [UInt8], next: Int64?) -> Response {
        var response = Response(id: request?.id)
        let info = ArtifactInfo(name: "a.bin", size: 6, sha256: sha, type: "application/octet-stream", attempt: attempt)
        response.piece = ArtifactPiece(artifact: info, from: from, bytes: bytes, next: next)
        return response
    }

    @Test("a piece of another attempt's file (a retry kept meanwhile) ends the read with an error", arguments: [("b", 1), ("a", 2)])
    func mixed(sha: String, attempt: Int) async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let read = Locked<[UInt8]>([])
        let outcome = Task { try await client.artifact(run: 1, name: "a.bin") { bytes in read.withLock { $0 += bytes } } }
        let first = try #require(await fake.nextRequest())
        fake.answer(Self.piece(first, sha: "a", attempt: 1, from: 0, [1, 2, 3], next: 3))
        let second = try #require(await fake.nextRequest())
        #expect(second.from == 3)
        fake.answer(Self.piece(second, sha: sha, attempt: attempt, from: 3, [4, 5, 6], next: nil))
        await #expect(throws: BatonClientError.self) { try await outcome.value }
        #expect(read.withLock { $0 } == [1, 2, 3])
    }

    @Test("pieces of one file are read whole")
    func whole() async throws {
        let fake = FakeTransport()
        let client = BatonClient(transport: fake, name: "fake")
        let read = Locked<[UInt8]>([])
        let outcome = Task { try await client.artifact(run: 1, name: "a.bin") { bytes in read.withLock { $0 += bytes } } }
        let first = try #require(await fake.nextRequest())
        fake.answer(Self.piece(first, sha: "a", attempt: 1, from: 0, [1, 2, 3], next: 3))
        let second = try #require(await fake.nextRequest())
        fake.answer(Self.piece(second, sha: "a", attempt: 1, from: 3, [4, 5, 6], next: nil))
        #expect(try await outcome.value.sha256 == "a")
        #expect(read.withLock { $0 } == [1, 2, 3, 4, 5, 6])
    }
}
