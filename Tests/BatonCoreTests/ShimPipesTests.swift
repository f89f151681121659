@testable import BatonProcess
import BatonEngine
import CBatonSystem
import Foundation
import Testing

/// The shim's ends of batond's pipes: a write batond's closed end cut short, and a shim started
/// without a progress pipe.
@Suite("Shim: batond's pipes", .offPool)
struct ShimPipesTests {
    /// `write`'s system call number, as /proc/PID/syscall names a blocked call (the generic table's elsewhere).
    #if arch(x86_64)
    static let writeCall = 1
    #else
    static let writeCall = 64
    #endif

    /// batond's end of the shim's pipe closed while the shim is blocked writing a large chunk to it
    /// (a batond killed while it read a flood): the write returns what went before the close, and
    /// the shim spools only the rest. The bytes that went are batond's (read, or lost in its pipe):
    /// written twice, they would repeat in the run's output once the next batond adopts the spool.
    @Test("what batond read and what the shim spooled do not overlap, and nothing is lost: what its pipe held unread is spooled first")
    func cutWrite() throws {
        let scratch = NSTemporaryDirectory() + "baton-shimcut-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let directory = scratch + "/run/1-1", disk = scratch + "/db/1-1", fifo = scratch + "/gate"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(mkfifo(fifo, 0o600) == 0)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(ShimTests.executable))
        process.arguments = ["-s", disk, directory, "10000000", "/bin/sh", "sh", "-c", "echo first; cat \"$0\" > /dev/null; seq 1 40000", fifo]
        let reader = try ShimDiskTests.run(process)
        var read = [UInt8]()
        while read.last != 10, let byte = try reader.read(upToCount: 1)?.first { read.append(byte) }
        // One page: the shim's writes of the child's 64 KiB chunks block part way.
        let capacity: Int32 = 4096
        // F_SETPIPE_SZ (F_LINUX_SPECIFIC_BASE + 7): not in Glibc's Swift module.
        let sized = fcntl(reader.fileDescriptor, 1_031, capacity)
        #expect(sized == capacity)
        let gate = open(fifo, O_WRONLY)
        if gate >= 0 { close(gate) }
        while read.count < 100_000, let chunk = try reader.read(upToCount: 65536), !chunk.isEmpty { read += chunk }
        // The shim blocked in a write of a larger chunk: the pipe full, unread, when batond's end closes.
        var unread: Int32 = 0
        #expect(ShimDiskTests.within { ioctl(reader.fileDescriptor, UInt(FIONREAD), &unread) == 0 && unread == capacity }, "unread: \(unread)")
        try ShimDiskTests.gone(reader)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let whole = Array(("first\n" + (1...40000).map { "\($0)\n" }.joined()).utf8)
        let spooled = ShimRecord.read(disk).output
        #expect(whole.starts(with: read), "batond's side read what the action did not write")
        #expect(whole.suffix(spooled.count).elementsEqual(spooled), "the spool is not the output's end")
        let lost = whole.count - read.count - spooled.count
        #expect(lost >= 0, "\(-lost) bytes both read by batond and spooled")
        #expect(lost == 0, "\(lost) bytes lost: what the pipe held unread when batond's end closed (at most \(capacity))")
    }

    /// The same cut with a spool bound of 16 KiB: the unread bytes spooled first (a full pipe: 64 KiB)
    /// trim the spool, and the trim must not use the buffer that still holds the rest of the cut
    /// chunk (review s37 N1: that rest was spooled as the trim's bytes). The action writes 60,000
    /// bytes (they fill batond's pipe but 5,536), then 20,000 in one write: the shim reads them as one
    /// chunk, writes 5,536 and blocks; nothing is read on batond's side until its end closes.
    @Test("a spool trimmed by the unread bytes keeps the action's last bytes, not the trim's")
    func cutWriteTrimmed() throws {
        let scratch = NSTemporaryDirectory() + "baton-shimcut-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let directory = scratch + "/run/1-1", disk = scratch + "/db/1-1", fifo = scratch + "/gate", data = scratch + "/data"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        #expect(mkfifo(fifo, 0o600) == 0)
        let whole = Array((1...20000).map { "\($0)\n" }.joined().utf8.prefix(80_000))
        FileManager.default.createFile(atPath: data, contents: Data(whole))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(ShimTests.executable))
        let writes = "import os, sys; d = open(sys.argv[1], 'rb').read(); os.write(1, d[:60000]); os.write(1, d[60000:])"
        let script = "cat \"$0\" > /dev/null; python3 -c \"$2\" \"$1\"; touch \"$1.done\""
        process.arguments = ["-s", disk, directory, "16384", "/bin/sh", "sh", "-c", script, fifo, data, writes]
        let reader = try ShimDiskTests.run(process)
        // 64 KiB, as on x86_64 by default (a system of 64 KiB pages gives 1 MiB).
        #expect(fcntl(reader.fileDescriptor, 1_031, Int32(65_536)) == 65_536)
        let gate = open(fifo, O_WRONLY)
        if gate >= 0 { close(gate) }
        // All written, the shim blocked writing the 20,000 (`write(1, ...)`), batond's pipe full.
        let pid = process.processIdentifier
        #expect(ShimDiskTests.within { FileManager.default.fileExists(atPath: data + ".done") })
        #expect(ShimDiskTests.within { (try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8))?.hasPrefix("\(Self.writeCall) 0x1 ") == true })
        var unread: Int32 = 0
        #expect(ioctl(reader.fileDescriptor, UInt(FIONREAD), &unread) == 0 && unread >= 32_768, "unread: \(unread)")
        try ShimDiskTests.gone(reader)
        process.waitUntilExit()
        let spooled = ShimRecord.read(disk).output
        #expect(spooled.count >= 16_384 && whole.suffix(spooled.count).elementsEqual(spooled),
                "the spool (\(spooled.count) bytes) is not the output's last bytes: \(String(decoding: spooled.suffix(40), as: UTF8.self).debugDescription)")
    }

    /// batond killed while the action is silent, with bytes it had not read yet in its pipe: the shim
    /// sees its end gone (POLLERR) and spools those bytes first (they were never batond's), then the rest.
    @Test("batond's end closed with bytes unread in its pipe: they are spooled before what comes after")
    func unreadAtClose() throws {
        let scratch = NSTemporaryDirectory() + "baton-shimpipes-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (process, fifo, _, disk, reader) = try ShimDiskTests.blockedAfterFirstLine(
            "echo first; echo second; echo third >&2; cat \"$0\" > /dev/null; echo later; exit 2", scratch: scratch, keepReading: true)
        // "second" and "third" relayed into the pipe, unread.
        var unread: Int32 = 0
        #expect(ShimDiskTests.within { ioctl(reader.fileDescriptor, UInt(FIONREAD), &unread) == 0 && unread >= 13 }, "unread: \(unread)")
        try ShimDiskTests.gone(reader)
        #expect(ShimDiskTests.within { FileManager.default.fileExists(atPath: disk + "/output") }, "nothing spooled once batond's end closed")
        #expect(ShimDiskTests.release(process, fifo) == 2)
        let record = ShimRecord.read(disk)
        #expect(String(decoding: record.output, as: UTF8.self) == "second\nthird\nlater\n", "\(record)")
    }

    /// Started without fd 3 (no progress pipe: a program that is not batond), the shim's own wake
    /// pipe takes that number: it must not be taken for a progress pipe, which a hand-over would
    /// replace with /dev/null (the shim then spun on it, always readable, until the action ended).
    @Test("without fd 3, a hand-over leaves the shim's own pipe alone: the shim spools the rest and ends as the action does")
    func noProgressPipe() throws {
        let scratch = NSTemporaryDirectory() + "baton-shimpipes-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (process, fifo, _, disk, reader) = try ShimDiskTests.blockedAfterFirstLine(
            "echo first; cat \"$0\" > /dev/null; echo later; exit 6", scratch: scratch, keepReading: true)
        let pid = process.processIdentifier
        let link = { (fd: Int) in try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)") }
        let wake = link(3)
        #expect(wake?.hasPrefix("pipe:") == true, "fd 3: \(wake ?? "none")")
        let letGo = ShimDiskTests.within {
            kill(pid, ProcessAttempt.handOverSignal)
            return link(1) == "/dev/null"
        }
        #expect(letGo, "the shim did not take the hand-over")
        #expect(link(3) == wake, "the shim's fd 3 after the hand-over: \(link(3) ?? "none")")
        #expect(try reader.readToEnd() ?? Data() == Data(), "batond's side read past the hand-over")
        #expect(ShimDiskTests.release(process, fifo) == 6)
        let record = ShimRecord.read(disk)
        #expect(record.exitCode == 6 && String(decoding: record.output, as: UTF8.self) == "later\n", "\(record)")
    }
}
