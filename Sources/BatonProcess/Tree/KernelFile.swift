import BatonEngine
import BatonRuntime
import Glibc

/// The kernel's small text files an attempt reads as it ends (`cpu.stat`, `memory.peak`,
/// `memory.events`, `cgroup.procs`, `/proc/PID/stat`): read with `read(2)` and parsed as bytes.
/// Reading them as Foundation strings and splitting them cost about 140,000 instructions per
/// run, a tenth of what batond spent on a `/bin/true` run (callgrind, 2026-12-01).
enum KernelFile {
    /// The file's bytes (up to `limit`), or nil when it cannot be opened or read. `oneRecord`: the
    /// caller knows the file is one record (see `read(_:limit:oneRecord:)` below).
    static func read(_ path: String, limit: Int = 1 << 20, oneRecord: Bool = false) -> [UInt8]? {
        read(open(path, O_RDONLY | O_CLOEXEC), limit: limit, oneRecord: oneRecord)
    }

    /// The bytes of the file at `directory` (its path and a slash, as bytes) and `name` (with its
    /// NUL), joined on the stack: no `String` built and converted for a file read once per run.
    static func read(_ name: [UInt8], under directory: [UInt8], limit: Int = 1 << 20, oneRecord: Bool = false) -> [UInt8]? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: directory.count + name.count) { path in
            let bytes = UnsafeMutableRawBufferPointer(path)
            bytes.copyBytes(from: directory)
            UnsafeMutableRawBufferPointer(rebasing: bytes[directory.count...]).copyBytes(from: name)
            return read(open(path.baseAddress!, O_RDONLY | O_CLOEXEC), limit: limit, oneRecord: oneRecord)
        }
    }

    /// The bytes of the file `name` in the open directory `directory` (a cgroup's control file,
    /// opened without walking the cgroup's path again), or nil.
    static func read(_ name: String, in directory: Int32, limit: Int = 1 << 20, oneRecord: Bool = false) -> [UInt8]? {
        read(openat(directory, name, O_RDONLY | O_CLOEXEC), limit: limit, oneRecord: oneRecord)
    }

    /// The bytes of the open file `fd` (closed here), or nil when it is not open or cannot be read.
    /// Read through a temporary buffer (4 KiB: on the heap in this toolchain, but not zeroed) into
    /// an array of the size read. Read to the end (a read of 0), except that a file the caller
    /// says is `oneRecord` ends at a read that fills less than it asked: a kernel file shown whole
    /// by one `show` (`cpu.stat`, `memory.peak`, `memory.events`, `memory.oom_control`,
    /// `/proc/PID/stat`) fills what it is asked while it has more. A file of records
    /// (`cgroup.procs`, `cgroup.threads`, `/proc/PID/maps`) does not: the kernel stops a read
    /// short at the record that would not fit its page, with more to come.
    private static func read(_ fd: Int32, limit: Int, oneRecord: Bool) -> [UInt8]? {
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { buffer -> [UInt8]? in
            var bytes: [UInt8] = []
            while bytes.count < limit {
                let asked = min(buffer.count, limit - bytes.count)
                let n = Glibc.read(fd, buffer.baseAddress!, asked)
                if n < 0 && errno == EINTR { continue }
                guard n >= 0 else { return nil }
                if n == 0 { break }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[..<n]))
                if oneRecord && n < asked { break }
            }
            return bytes
        }
    }

    /// The number on the line that starts with `key` and a space, in `key value` lines
    /// (`cpu.stat`, `memory.events`, `memory.oom_control`); nil when no such line has one.
    static func value(of key: String, in bytes: [UInt8]) -> Int64? {
        let key = Array(key.utf8)
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
            let line = bytes[start..<end]
            if line.count > key.count, line.starts(with: key), line[start + key.count] == 0x20 {
                return number(in: line[(start + key.count + 1)...])
            }
            start = end + 1
        }
        return nil
    }

    /// The whole numbers of a file with one per line (`cgroup.procs`).
    static func numbers(in bytes: [UInt8]) -> [Int64] {
        bytes.split(separator: 0x0A).compactMap { number(in: $0) }
    }

    /// The whole number the bytes hold, spaces and a newline around it allowed (`memory.peak`:
    /// `1048576\n`); nil for anything else (`max`, a sign, an overflow).
    static func number(in bytes: some Collection<UInt8>) -> Int64? {
        var value: Int64 = 0
        var digits = 0
        var trailing = false
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9") where !trailing:
                let (times, overflow) = value.multipliedReportingOverflow(by: 10)
                let (sum, carry) = times.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                guard !overflow, !carry else { return nil }
                value = sum
                digits += 1
            case 0x20, 0x0A, 0x09: trailing = digits > 0
            default: return nil
            }
        }
        return digits > 0 ? value : nil
    }
}
