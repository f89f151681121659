@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import Foundation
import Testing

@Suite("The kernel's small files, read as bytes")
struct KernelFileTests {
    static let cpuStat = Array("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 0\n".utf8)
    static let memoryEvents = Array("low 0\nhigh 0\nmax 4\noom 2\noom_kill 1\noom_group_kill 0\n".utf8)

    @Test("a key's value in key-value lines: the whole key, never a longer one that starts with it")
    func values() {
        #expect(KernelFile.value(of: "user_usec", in: Self.cpuStat) == 1000)
        #expect(KernelFile.value(of: "system_usec", in: Self.cpuStat) == 500)
        #expect(KernelFile.value(of: "usage_usec", in: Self.cpuStat) == 1500)
        #expect(KernelFile.value(of: "usec", in: Self.cpuStat) == nil)
        #expect(KernelFile.value(of: "oom", in: Self.memoryEvents) == 2)
        #expect(KernelFile.value(of: "oom_kill", in: Self.memoryEvents) == 1)
        #expect(AttemptCgroup.oomKills(memoryEvents: Self.memoryEvents) == 1)
        #expect(AttemptCgroup.oomKills(memoryEvents: Array("oom_kill_disable 0\nunder_oom 0\noom_kill 3".utf8)) == 3)
        #expect(KernelFile.value(of: "populated", in: Array("populated 1\nfrozen 0\n".utf8)) == 1)
        #expect(KernelFile.value(of: "populated", in: Array("populated 0\nfrozen 0\n".utf8)) == 0)
        #expect(KernelFile.value(of: "a", in: Array("a x\n".utf8)) == nil)
        #expect(KernelFile.value(of: "a", in: []) == nil)
    }

    @Test("a file of one number: the number with its newline, else nil", arguments: [
        ("1048576\n", Int64(1_048_576) as Int64?), ("0", 0), (" 7 \n", 7), ("max\n", nil), ("-1\n", nil), ("", nil), ("\n", nil),
        ("1 2\n", nil), ("9223372036854775807\n", Int64.max), ("9223372036854775808\n", nil),
    ])
    func number(text: String, expected: Int64?) {
        #expect(KernelFile.number(in: Array(text.utf8)) == expected)
    }

    @Test("a file of numbers one per line (cgroup.procs)")
    func numbers() {
        #expect(KernelFile.numbers(in: Array("12\n345\n6\n".utf8)) == [12, 345, 6])
        #expect(KernelFile.numbers(in: []) == [])
    }

    @Test("a read returns the whole file, past its first buffer, and nil for a file that is not there")
    func read() throws {
        let path = NSTemporaryDirectory() + "baton-kernel-file-" + UUID().uuidString
        let text = (0..<3_000).map(String.init).joined(separator: "\n") + "\n"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(KernelFile.read(path) == Array(text.utf8))
        #expect(KernelFile.numbers(in: try #require(KernelFile.read(path))).count == 3_000)
        #expect(KernelFile.read(path, limit: 5_000)?.count == 5_000)
        #expect(KernelFile.read(path + ".missing") == nil)
        // Exactly one buffer: the read after it hears the end.
        let page = String(repeating: "7\n", count: 2_048)
        try page.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(KernelFile.read(path) == Array(page.utf8))
        // A file of the kernel's, whose size stat does not know.
        let stat = try #require(KernelFile.read("/proc/self/stat", oneRecord: true))
        #expect(String(decoding: stat, as: UTF8.self).hasPrefix("\(getpid()) ("))
    }

    @Test("a file read by its directory's bytes and its name's (the v1 memory group's files at a run's end): joined as a path; a missing one is nil")
    func readUnder() throws {
        let directory = NSTemporaryDirectory() + "baton-kernelfile-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data("oom_kill_disable 0\noom_kill 2\n".utf8).write(to: URL(fileURLWithPath: directory + "/memory.oom_control"))
        let bytes = KernelFile.read(Array("memory.oom_control".utf8) + [0], under: Array((directory + "/").utf8), oneRecord: true)
        #expect(bytes.flatMap { AttemptCgroup.oomKills(memoryEvents: $0) } == 2)
        #expect(KernelFile.read(Array("memory.max_usage_in_bytes".utf8) + [0], under: Array((directory + "/").utf8)) == nil)
    }

    @Test("a kernel file of records longer than a page is read whole, past the short reads it gives (/proc/self/maps)")
    func recordsReadWhole() throws {
        // 400 mappings that cannot merge (every other page readable), about 30 KB of maps: the
        // kernel ends each read short of the page at a record that would not fit.
        let page = Int(sysconf(Int32(_SC_PAGESIZE))), count = 400
        let base = try #require(mmap(nil, page * count, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        #expect(base != MAP_FAILED)
        defer { munmap(base, page * count) }
        for index in stride(from: 1, to: count, by: 2) { #expect(mprotect(base + index * page, page, PROT_NONE) == 0) }
        let maps = String(decoding: try #require(KernelFile.read("/proc/self/maps")), as: UTF8.self)
        let starts = Set(maps.split(separator: "\n").map { $0.prefix { $0 != "-" } })
        let missing = (0..<count).filter { !starts.contains(Substring(String(UInt(bitPattern: base + $0 * page), radix: 16))) }
        #expect(missing.isEmpty)
        #expect(maps.hasSuffix("\n") && maps.utf8.count > 4 * 4096)
    }
}
