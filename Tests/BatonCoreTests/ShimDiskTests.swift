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
    /// Starts the shim as `baton-shim -s disk directory 1000 /bin/sh sh -c script arguments...` with
    /// `directory` made and `disk` not, its stdout and stderr one pipe whose first line is read
    /// here; the pipe's reading end is returned open (batond's side).
    static func launch(_ script: String, directory: String, disk: String, arguments: [String]) throws -> (Process, FileHandle) {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(ShimTests.executable))
        process.arguments = ["-s", disk, directory, "1000", "/bin/sh", "sh", "-c", script] + arguments
        let reader = try Self.run(process)
        var first = [UInt8]()
        while first.last != 10, let byte = try reader.read(upToCount: 1)?.first { first.append(byte) }
        return (process, reader)
    }

    /// The shim running `sh -c script` with DIR made and DISK (`PLACE/RUN-ATTEMPT`) not; batond's
    /// side reads everything to the end.
    static func shim(_ script: String, removing: Bool = false) throws -> (status: Int32, directory: String, disk: String, scratch: String) {
        let scratch = NSTemporaryDirectory() + "baton-shimdisk-\(UUID().uuidString)"
        let directory = scratch + "/run/shims-x/1-1", disk = scratch + "/db-shims/1-1"
        // `removing`: the runtime directory is the script's $0, for it to remove.
        let (process, reader) = try launch(script, directory: directory, disk: disk, arguments: removing ? [directory] : [])
        _ = try reader.readToEnd()
        process.waitUntilExit()
        return (process.terminationStatus, directory, disk, scratch)
    }

    @Test("batond reading: the status in the runtime directory, nothing on the disk (not even its directory)")
    func connected() throws {
        let (status, directory, disk, scratch) = try Self.shim("echo first; echo more; exit 3")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(status == 3)
        #expect(ShimRecord.read(directory).exitCode == 3)
        #expect(!FileManager.default.fileExists(atPath: disk.parentPath), "the disk's place made on the common path")
    }

    @Test("batond gone after the first line: the spool and the status on the disk (directory and parent made 0700), none in the runtime directory")
    func gone() throws {
        let scratch = NSTemporaryDirectory() + "baton-shimdisk-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // The rest is written only once batond's side has closed (the gate), whatever the load.
        let (process, fifo, directory, disk, _) = try Self.blockedAfterFirstLine(
            "echo first; cat \"$0\" > /dev/null; echo later; echo oops >&2; exit 4", scratch: scratch)
        #expect(Self.release(process, fifo) == 4)
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
        let scratch = NSTemporaryDirectory() + "baton-shimdisk-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (process, fifo, directory, disk, _) = try Self.blockedAfterFirstLine("echo first; cat \"$0\" > /dev/null; exit 5", scratch: scratch)
        #expect(Self.release(process, fifo) == 5)
        #expect(ShimRecord.read(disk).exitCode == 5)
        #expect(!FileManager.default.fileExists(atPath: directory + "/status"))
    }

    @Test("a runtime directory that refuses the status (removed under the shim): the status goes to the disk")
    func runtimeRefuses() throws {
        let (status, _, disk, scratch) = try Self.shim("echo first; rm -rf \"$0\"; exit 6", removing: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(status == 6)
        #expect(ShimRecord.read(disk).exitCode == 6)
    }

    /// The shim running `sh -c script FIFO` (the script blocks on `cat "$0"` until the test opens
    /// the FIFO), DIR made, DISK not; batond's side has read the first line and closed (or, with
    /// `keepReading`, keeps its end open, unread).
    static func blockedAfterFirstLine(_ script: String, scratch: String, keepReading: Bool = false) throws
        -> (process: Process, fifo: String, directory: String, disk: String, reader: FileHandle) {
        let directory = scratch + "/run/shims-x/1-1", disk = scratch + "/db-shims/1-1", fifo = scratch + "/gate"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        #expect(mkfifo(fifo, 0o600) == 0)
        let (process, reader) = try launch(script, directory: directory, disk: disk, arguments: [fifo])
        if !keepReading { try gone(reader) }
        return (process, fifo, directory, disk, reader)
    }

    /// Runs the shim `process` with its stdout and stderr one pipe, both ends close-on-exec (no
    /// process another test spawns keeps a reader of it past its exec); returns batond's side, the reading end.
    static func run(_ process: Process) throws -> FileHandle {
        var ends: [Int32] = [-1, -1]
        #expect(baton_pipe(&ends) == 0)
        let reader = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        let writer = FileHandle(fileDescriptor: ends[1], closeOnDealloc: true)
        process.standardOutput = writer
        process.standardError = writer
        try process.run()
        try writer.close()
        return reader
    }

    /// Batond's side gone, as a SIGKILLed batond's is: `reader` closed and held by no process. A child
    /// another test forks meanwhile holds a copy of it until its exec (close-on-exec closes it only
    /// then): the shim would see batond reading still and put the status in DIR (session 32's CI).
    static func gone(_ reader: FileHandle) throws {
        var pipe = stat()
        #expect(fstat(reader.fileDescriptor, &pipe) == 0)
        try reader.close()
        #expect(within { readers(ofPipe: pipe.st_ino) == 0 }, "a process still holds batond's end of the shim's pipe")
    }

    /// How many descriptors of any process read the pipe `inode` (/proc/PID/fd links `pipe:[inode]`,
    /// its fdinfo's flags O_RDONLY; the writing ends share the inode).
    static func readers(ofPipe inode: ino_t) -> Int {
        let link = "pipe:[\(inode)]"
        var count = 0
        for pid in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] where pid.allSatisfy(\.isNumber) {
            for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? [] {
                guard (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")) == link,
                      let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8),
                      let flags = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") })
                        .flatMap({ Int($0.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8) })
                else { continue }
                if flags & Int(O_ACCMODE) == Int(O_RDONLY) { count += 1 }
            }
        }
        return count
    }

    /// Lets the script's `cat` end (opens the FIFO for writing and closes it) and waits for the shim.
    static func release(_ process: Process, _ fifo: String) -> Int32 {
        let fd = open(fifo, O_WRONLY)
        if fd >= 0 { close(fd) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Whether `condition` holds within 20 s (a bound against a hang; looked at every 10 ms).
    static func within(_ condition: () -> Bool) -> Bool {
        for _ in 0..<2_000 {
            if condition() { return true }
            usleep(10_000)
        }
        return false
    }

    @Test("batond gone while the action is silent and still running: the disk's directory is made at once (review-shimplace4 1: a batond with another runtime directory then finds the attempt), the status goes there at the end")
    func goneWhileRunning() throws {
        let scratch = NSTemporaryDirectory() + "baton-shimdisk-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (process, fifo, directory, disk, _) = try Self.blockedAfterFirstLine("echo first; cat \"$0\" > /dev/null; exit 7", scratch: scratch)
        let made = Self.within { FileManager.default.fileExists(atPath: disk) }
        #expect(made, "no directory on the disk while the action ran, batond gone")
        #expect(Self.release(process, fifo) == 7)
        #expect(ShimRecord.read(disk).exitCode == 7)
        #expect(!FileManager.default.fileExists(atPath: directory + "/status"))
    }

    @Test("the disk's directory cannot be made at a hand-over (a file in its parent's place), then can: made at the next write, the rest of the output spooled and the status there (review-shimplace4 2)")
    func diskRefusedThenFree() throws {
        let scratch = NSTemporaryDirectory() + "baton-shimdisk-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: scratch + "/db-shims", contents: Data()))
        let (process, fifo, directory, disk, reader) = try Self.blockedAfterFirstLine("echo first; cat \"$0\" > /dev/null; echo later; exit 4",
                                                                                   scratch: scratch, keepReading: true)
        defer { try? reader.close() }
        // The hand-over: the shim loses batond (its disk directory tried then, refused), then puts
        // /dev/null on its fd 1. Once it has, the place is freed.
        kill(process.processIdentifier, SIGURG)
        let handedOver = Self.within {
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.processIdentifier)/fd/1")) == "/dev/null"
        }
        #expect(handedOver, "the shim did not hand over: \((try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? "")")
        try FileManager.default.removeItem(atPath: scratch + "/db-shims")
        #expect(Self.release(process, fifo) == 4)
        let record = ShimRecord.read(disk)
        #expect(record.exitCode == 4 && String(decoding: record.output, as: UTF8.self) == "later\n", "\(record)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/status"))
    }
}
