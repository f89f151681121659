import Foundation
import Testing

/// The harness removes what killed test processes left of their PostgreSQL servers, and nothing else.
@Suite(.offPool) struct PostgresLeftoversTests {
    private func directory(_ temporary: String, _ name: String, owner: String?) throws -> String {
        let path = temporary + "/" + PostgresLeftovers.prefix + name
        try FileManager.default.createDirectory(atPath: path + "/data", withIntermediateDirectories: true)
        if let owner { try Data(owner.utf8).write(to: URL(fileURLWithPath: path + "/" + PostgresLeftovers.ownerFile)) }
        return path
    }

    @Test func sweepsTheDeadKeepsTheLiving() throws {
        let temporary = NSTemporaryDirectory() + "leftovers-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let mine = try directory(temporary, "mine", owner: PostgresLeftovers.ownerLine())
        let reused = try directory(temporary, "reused", owner: "\(getpid()) 1")          // this pid, another start time
        let dead = try directory(temporary, "dead", owner: "2147483000 5")
        let fresh = try directory(temporary, "fresh", owner: nil)                        // an old harness's, just made
        let stale = try directory(temporary, "stale", owner: nil)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7_200)], ofItemAtPath: stale)
        let other = temporary + "/not-ours"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)

        PostgresLeftovers.sweep(in: temporary, pgCtl: "/bin/false")

        let left = Set(try FileManager.default.contentsOfDirectory(atPath: temporary))
        #expect(left == [(mine as NSString).lastPathComponent, (fresh as NSString).lastPathComponent, "not-ours"])
        #expect(!left.contains((reused as NSString).lastPathComponent))
        #expect(!left.contains((dead as NSString).lastPathComponent))
    }

    @Test func ownerLineNamesThisProcess() {
        let parts = PostgresLeftovers.ownerLine().split(separator: " ")
        #expect(parts.count == 2)
        #expect(parts.first.map(String.init) == String(getpid()))
        #expect(parts.last.map(String.init) != "?")
    }
}
