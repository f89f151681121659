@testable import BatonProcess
import BatonEngine
import Foundation
import Glibc
import Testing

/// The shim takes its disk directory (`-s DISK`) and DISK's parent only where they are this user's
/// own and closed to others (review-shimplace4 5): where another user can write the database's
/// directory, a planted symlink or directory would have root write the spool and status there.
/// Refused, the disk is as good as full: the status goes to the runtime directory.
@Suite("Shim: a disk place not its own is refused", .serialized, .offPool)
struct ShimPlaceOwnerTests {
    enum Plant: String, CaseIterable, CustomTestStringConvertible {
        case parentSymlink = "DISK's parent a symlink to another directory"
        case diskSymlink = "DISK a symlink to another directory"
        case openToOthers = "DISK a directory others may write (0777)"
        case anotherUsers = "DISK a directory of another user's"
        var testDescription: String { rawValue }
    }

    /// Plants `plant` at the disk place under `scratch`; returns the directory a symlink leads to.
    static func plant(_ plant: Plant, disk: String, scratch: String) throws -> String {
        let elsewhere = scratch + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        let parent = disk.parentPath
        switch plant {
        case .parentSymlink:
            #expect(symlink(elsewhere, parent) == 0)
        case .diskSymlink:
            #expect(mkdir(parent, 0o700) == 0 && symlink(elsewhere, disk) == 0)
        case .openToOthers:
            #expect(mkdir(parent, 0o700) == 0 && mkdir(disk, 0o700) == 0 && chmod(disk, 0o777) == 0)
        case .anotherUsers:
            #expect(mkdir(parent, 0o700) == 0 && mkdir(disk, 0o700) == 0)
            // As root (this suite's machine), the planted directory is given to nobody; as
            // another user the shim's euid differs from root's directory in the same way.
            if geteuid() == 0 { #expect(chown(disk, 65534, 65534) == 0) } else { #expect(rmdir(disk) == 0 && symlink("/", disk) == 0) }
        }
        return elsewhere
    }

    @Test("batond gone: nothing is written through the planted place, the status stays in the runtime directory", arguments: Plant.allCases)
    func refused(_ planted: Plant) throws {
        let scratch = NSTemporaryDirectory() + "baton-shimowner-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let disk = scratch + "/db-shims/1-1"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let elsewhere = try Self.plant(planted, disk: disk, scratch: scratch)
        let (process, fifo, directory, _, _) = try ShimDiskTests.blockedAfterFirstLine(
            "echo first; cat \"$0\" > /dev/null; echo later; exit 3", scratch: scratch)
        #expect(ShimDiskTests.release(process, fifo) == 3)
        #expect(ShimRecord.read(directory).exitCode == 3, "the status is not in the runtime directory")
        let written = (try? FileManager.default.subpathsOfDirectory(atPath: elsewhere)) ?? []
        #expect(written.isEmpty, "written through the planted place: \(written)")
        if planted == .openToOthers || planted == .anotherUsers {
            let inside = (try? FileManager.default.contentsOfDirectory(atPath: disk)) ?? []
            #expect(inside.isEmpty, "written into the planted directory: \(inside)")
        }
    }

    @Test("the shim's own places, made by an earlier attempt (0700, this user's), are taken as before")
    func ownTaken() throws {
        let scratch = NSTemporaryDirectory() + "baton-shimowner-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let disk = scratch + "/db-shims/1-1"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        #expect(chmod(disk.parentPath, 0o700) == 0)
        let (process, fifo, _, _, _) = try ShimDiskTests.blockedAfterFirstLine("echo first; cat \"$0\" > /dev/null; exit 4", scratch: scratch)
        #expect(ShimDiskTests.release(process, fifo) == 4)
        #expect(ShimRecord.read(disk).exitCode == 4)
    }

    @Test("recovery neither reads nor empties an attempt's place that is a symlink: the link goes, what it points at stays")
    func recoveryIgnoresSymlink() throws {
        let scratch = NSTemporaryDirectory() + "baton-shimowner-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let elsewhere = scratch + "/elsewhere", planted = scratch + "/db-shims/1-1"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: planted.parentPath, withIntermediateDirectories: true)
        for (name, text) in [("status", "exit 0\n"), ("output", "secret\n")] {
            #expect(FileManager.default.createFile(atPath: elsewhere + "/" + name, contents: Data(text.utf8)))
        }
        #expect(symlink(elsewhere, planted) == 0)
        let record = ShimRecord.read([planted])
        #expect(record.exitCode == nil && record.output.isEmpty, "\(record)")
        #expect(!ShimRecord.remove(planted))
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: planted)) == nil, "the planted link is still there")
        #expect(Set((try? FileManager.default.contentsOfDirectory(atPath: elsewhere)) ?? []) == ["status", "output"])
    }
}
