@testable import BatonProcess
@testable import BatonEngine
import Foundation
import Testing

/// What an attempt's directory may hold that batond must survive: sizes past Int64, more entries
/// than kept, and (items 2 and 3) files that are not the run's user's.
@Suite("Artifacts' limits")
struct ArtifactLimitsTests {
    static func root() throws -> String {
        let root = NSTemporaryDirectory() + "baton-artifact-limits-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return root
    }

    @Test("sizes summing past Int64 (sparse files) saturate: no trap, none kept; size() says the largest")
    func hugeSizes() {
        let files = (0..<4).map { ArtifactScan.File(name: "f\($0)", size: Int64.max / 2) }
        let scan = ArtifactScan(directory: "/nonexistent", files: files)
        #expect(scan.total == Int64.max)
        #expect(ArtifactScan.size(Int64.max) == "8589934592 GiB")
        #expect(ArtifactScan.size(Int64.max - 1) == "8589934592 GiB")
        #expect(ArtifactScan.size((3 << 20) + 1) == "3.1 MiB")
        #expect(ArtifactScan.size((123 << 20) - 5) == "123 MiB")
        #expect(ArtifactScan.size(1 << 10) == "1 KiB")
    }

    @Test("a directory of many links says at most 100 of them, and how many more")
    func noticesCapped() throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for index in 0..<150 { #expect(symlink("/etc/passwd", root + "/l\(index)") == 0) }
        let scan = ArtifactScan.look(root, bound: 10)
        #expect(scan.notices.count == 101)
        #expect(scan.notices.last == "and 50 more not kept")
    }
}
