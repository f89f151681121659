@testable import BatonProcess
import BatonEngine
import Foundation
import CBatonSystem
import Testing

/// `baton-shim -s DISK DIR`: DIR under batond's runtime directory, DISK beside the database. While
/// batond reads, the status goes to DIR and DISK is never made; once batond is gone, the spool and
/// the status go to DISK (made by the shim), never to DIR's tmpfs.
@Suite("Shim: the disk's directory", .serialized, .offPool)
struct ShimDiskTests {
    /// The shim running `sh -c script` with DIR made and DISK (`PLACE/RUN-ATTEMPT`) not; batond's
    /// side reads the first line, then closes (`closeEarly`) or reads to the end.
    static func shim(_ script: String, closeEarly: Bool, removing: Bool = false) throws -> (status: Int32, directory: String, disk: String, scratch: String) {
        let scratch = NSTemporaryDirectory() + "baton-shimdisk-\(UUID().uuidString)"
        let directory = scratch + "/run/shims-x/1-1", disk = scratch + "/db-shims/1-1"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(ShimTests.executable))
        // `removing`: the runtime directory is the script's $0, for it to remove.
        process.arguments = ["-s", disk, directory, "1000", "/bin/sh", "sh", "-c", script] + (removing ? [directory] : [])
        // Both ends close-on-exec: no process another test spawns meanwhile keeps a reader of it.
        var ends: [Int32] = [-1, -1]
        #expect(baton_pipe(&ends) == 0)
        let reader = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        let writer = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
        process.standardOutput = writer
        process.standardError = writer
        try process.run()
        try writer.close()
        var first = [UInt8]()
        while first.last != 10, let byte = try reader.read(upToCount: 1)?.first { first.append(byte) }
        if closeEarly { try reader.close() } else { _ = try reader.readToEnd() }
        process.waitUntilExit()
        return (process.terminationStatus, directory, disk, scratch)
    }

    @Test("batond reading: the status in the runtime directory, nothing on the disk (not even its directory)")
    func connected() throws {
        let (status, directory, disk, scratch) = try Self.shim("echo first; echo more; exit 3", closeEarly: false)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(status == 3)
        #expect(ShimRecord.read(directory).exitCode == 3)
        #expect(!FileManager.default.fileExists(atPath: disk.parentPath), "the disk's place made on the common path")
    }

    @Test("batond gone after the first line: the spool and the status on the disk (directory and parent made 0700), none in the runtime directory")
    func gone() throws {
        let (status, directory, disk, scratch) = try Self.shim("echo first; sleep 0.2; echo later; echo oops >&2; exit 4", closeEarly: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(status == 4)
        let record = ShimRecord.read(disk)
        #expect(record.exitCode == 4 && String(decoding: record.output, as: UTF8.self) == "later\noops\n", "\(record)")
        for name in ["status", "output"] { #expect(!FileManager.default.fileExists(atPath: directory + "/" + name), "\(name) on the tmpfs") }
        for path in [disk, disk.parentPath] {
            let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
            #expect(mode == 0o700, "\(path): \(String(mode, radix: 8))")
        }
        // Recovery reads the runtime directory, then the disk's.
        #expect(ShimRecord.read([directory, disk]) == record)
    }

    @Test("batond gone while the action is silent (a crash between two writes): the status still goes to the disk")
    func goneSilent() throws {
        let (status, directory, disk, scratch) = try Self.shim("echo first; sleep 0.3; exit 5", closeEarly: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(status == 5)
        #expect(ShimRecord.read(disk).exitCode == 5)
        #expect(!FileManager.default.fileExists(atPath: directory + "/status"))
    }

    @Test("a runtime directory that refuses the status (removed under the shim): the status goes to the disk")
    func runtimeRefuses() throws {
        let (status, _, disk, scratch) = try Self.shim("echo first; rm -rf \"$0\"; exit 6", closeEarly: false, removing: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(status == 6)
        #expect(ShimRecord.read(disk).exitCode == 6)
    }
}
