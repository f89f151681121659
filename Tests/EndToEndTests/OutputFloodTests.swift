import Foundation
import Testing

/// Issue 24, item 7: a run writing 1 GiB as fast as it can. Measured from /proc and the file
/// sizes, never by time.
@Suite("End to end: a flood of output")
struct OutputFloodTests {
    /// A field of /proc/PID/status in KiB (`VmRSS`, `VmHWM`).
    static func kib(_ field: String, of pid: Int32) throws -> Int64 {
        Int64(try #require(ProcStatus.number(field, of: pid)))
    }

    static func size(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64) ?? 0
    }

    @Test("1 GiB of output: batond's peak memory grows by less than 64 MiB, the history by keep and a little")
    func gigabyte() throws {
        let daemon = try Daemon(config: #"{ actions: { flood: { exec: ["head", "-c", "1073741824", "/dev/zero"] } } }"#)
        #expect(try daemon.baton("run", "flood").code == 0)
        let pid = daemon.process.processIdentifier
        let before = try Self.kib("VmRSS", of: pid)
        let history = Self.size(daemon.database) + Self.size(daemon.database + "-wal")
        _ = try execute("/usr/bin/sh", ["-c", "echo 1 > /proc/\(pid)/clear_refs 2>/dev/null; echo 5 > /proc/\(pid)/clear_refs 2>/dev/null || true"])
        let baseline = try Self.kib("VmHWM", of: pid)
        #expect(try daemon.baton("run", "flood").code == 0)
        let peak = try Self.kib("VmHWM", of: pid)
        let grown = peak - max(baseline, before)
        #expect(grown < 64 * 1_024, "batond's peak RSS grew by \(grown) KiB")
        let database = Self.size(daemon.database)
        // The first run's keep is in the file already; the second adds its own 16 MiB and a little.
        #expect(database - history < (16 + 4) << 20, "the history grew by \(database - history) bytes")
        let logs = try daemon.baton("logs", "2")
        #expect(logs.code == 0, "\(logs.stderr)")
        // The head and the tail, and at most a chunk more where a stored chunk straddles the tail's start.
        #expect(logs.stdout.utf8.count >= 16 << 20 && logs.stdout.utf8.count <= (16 << 20) + (64 << 10), "\(logs.stdout.utf8.count)")
        print("output flood: peak RSS +\(grown) KiB, history +\(database - history) B")
    }
}
