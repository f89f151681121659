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

extension ArtifactLimitsTests {
    static func write(_ path: String, _ text: String = "x") throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    @Test("the listing stops past maxFiles entries: none kept, said so")
    func tooManyFiles() throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        for index in 0..<7 { try Self.write(root + "/f\(index)") }
        let scan = ArtifactScan.look(root, bound: 1 << 20, maxFiles: 5)
        #expect(scan.files.isEmpty)
        #expect(scan.notices == ["over 5 files, none kept"])
        #expect(ArtifactScan.look(root, bound: 1 << 20, maxFiles: 7).files.count == 7)
    }

    @Test("removal empties a wide and nested tree, links not followed")
    func removal() throws {
        let root = try Self.root()
        let outside = try Self.root()
        defer { try? FileManager.default.removeItem(atPath: root); try? FileManager.default.removeItem(atPath: outside) }
        try Self.write(outside + "/keep")
        try FileManager.default.createDirectory(atPath: root + "/a/b/c", withIntermediateDirectories: true)
        for index in 0..<300 { try Self.write(root + "/a/f\(index)") }
        try Self.write(root + "/a/b/c/deep")
        #expect(symlink(outside, root + "/a/out") == 0)
        ArtifactTree.remove(root)
        #expect(!FileManager.default.fileExists(atPath: root))
        #expect(FileManager.default.fileExists(atPath: outside + "/keep"))
    }

    @Test("another user's run: a file not its own, hard-linked, or on another file system is named and not kept")
    func refusals() throws {
        var info = stat()
        info.st_uid = 1000; info.st_nlink = 1; info.st_dev = 7
        let owner = ArtifactOwner(uid: 1000, device: 7)
        #expect(ArtifactScan.refusal(info, owner: owner) == nil)
        #expect(ArtifactScan.refusal(info, owner: nil) == nil)
        info.st_nlink = 2
        #expect(ArtifactScan.refusal(info, owner: owner) == "a hard link (2 names)")
        info.st_nlink = 1; info.st_uid = 0
        #expect(ArtifactScan.refusal(info, owner: owner) == "owned by uid 0, not the run's user")
        info.st_uid = 1000; info.st_dev = 8
        #expect(ArtifactScan.refusal(info, owner: owner) == "on another file system than $BATON_ARTIFACTS")
    }

    @Test("the walk and the open both refuse what is not the run's user's own, and a hard link")
    func walkAndOpenRefuse() throws {
        let root = try Self.root()
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/work", withIntermediateDirectories: true)
        try Self.write(root + "/work/mine")
        try Self.write(root + "/work/linked")
        #expect(link(root + "/work/linked", root + "/other") == 0)
        let me = ArtifactScan.look(root + "/work", bound: 1 << 20, owner: getuid())
        #expect(me.files.map(\.name) == ["mine"])
        #expect(me.notices == ["linked: a hard link (2 names), not kept"])
        // The attempt's directory must be on the file system of the one above: /proc is not on /'s.
        let proc = ArtifactScan.look("/proc", bound: 1 << 20, owner: getuid())
        #expect(proc.files.isEmpty && proc.notices == ["the artifacts directory: another file system mounted there, not read"], "\(proc.notices.prefix(3))")
        let other = ArtifactScan.look(root + "/work", bound: 1 << 20, owner: getuid() + 1)
        #expect(other.files.isEmpty)
        #expect(other.notices.contains("mine: owned by uid \(getuid()), not the run's user, not kept"))
        // Linked after the look: the open's own check refuses it.
        var late = me
        #expect(link(root + "/work/mine", root + "/again") == 0)
        guard case let .failure(refused) = late.openChecked("mine") else { Issue.record("opened"); return }
        #expect(refused.notice == "mine: a hard link (2 names), not kept")
        late.owner = nil
        guard case let .success(fd) = late.openChecked("mine") else { Issue.record("refused as batond's own run"); return }
        close(fd)
    }
}
