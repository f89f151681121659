@testable import BatonProcess
import BatonEngine
import BatonRuntime
import Foundation
import Testing

/// An attempt a previous batond started, whose shim has ended: `ExecRunner.attach` collects what
/// its directories keep (status, spool) and ends it as a spawned attempt would end.
@Suite("Shim: an ended shim collected", .offPool)
struct ShimAdoptedTests {
    /// Attaches to a shim that is gone (`alive: false`), its directory `runtime` and `disk`, the
    /// history holding `total` bytes of the run's output; returns the outcome, the bytes told, and
    /// what `DIR/taken` said when they were told.
    static func collect(_ runtime: String, _ disk: String, total: Int64) async throws -> (AttemptOutcome?, String, String?) {
        let (runner, _) = try ShimTests().runner()
        // A pid no process has now: a child that ran and was reaped.
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let surviving = SurvivingAttempt(attempt: 1, directory: runtime, disk: disk, pid: gone.processIdentifier, identity: "", alive: false, outputTotal: total)
        let (ends, end) = AsyncStream<AttemptOutcome>.makeStream()
        let told = Locked((bytes: [UInt8](), taken: String?.none))
        _ = runner.attach(Job(runID: 7, action: Action(name: "t", exec: ["/no/such/program"]), attempt: 1, params: [:]), surviving) { event in
            if case let .output(_, bytes) = event {
                let taken = try? String(contentsOfFile: disk + "/taken", encoding: .utf8)
                told.withLock { $0.bytes += bytes; $0.taken = taken }
            }
            if case let .ended(outcome) = event {
                end.yield(outcome)
                end.finish()
            }
        }
        var outcome: AttemptOutcome?
        for await value in ends { outcome = value }
        let (bytes, taken) = told.withLock { ($0.bytes, $0.taken) }
        return (outcome, String(decoding: bytes, as: UTF8.self), taken)
    }

    static func place(_ files: [String: String]) throws -> (scratch: String, runtime: String, disk: String) {
        let scratch = NSTemporaryDirectory() + "baton-shimadopted-\(UUID().uuidString)"
        let runtime = scratch + "/run/7-1", disk = scratch + "/db/7-1"
        for path in [runtime, disk] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        for (name, text) in files { try text.write(toFile: disk + "/" + name, atomically: true, encoding: .utf8) }
        return (scratch, runtime, disk)
    }

    /// Found under the runtime directory with its status on the disk (`SurvivingAttempt.disk`:
    /// written there once batond was gone) saying its program could not be executed: a failed
    /// start, as a spawned attempt's would be (review s37 F6).
    @Test("an adopted shim's exec failure kept on the disk fails the start, not exit 127")
    func execFailure() async throws {
        let (scratch, runtime, disk) = try Self.place(["status": "exit 127\nexec-failed \(ENOENT) /no/such/program\n"])
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (outcome, _, _) = try await Self.collect(runtime, disk, total: 0)
        #expect(outcome?.result.started == false, "\(String(describing: outcome?.result))")
        #expect(outcome?.result.error == "cannot run /no/such/program: No such file or directory", "\(String(describing: outcome?.result))")
    }

    /// A batond that collected a spool and died before the run's end removed it (draining what the
    /// action left, for up to its kill grace): the next batond collects it again, and must not tell
    /// what the history holds already (review s37 F3). Where the spool began is written before it is told.
    @Test("a spool is told once: where it began is written first, and a second collection tells only what the history lacks", arguments: [
        (Int64?.none, Int64(5), "abc"),  // first collection: all, `taken` written as 5 before it is told
        (5, 5, "abc"),                   // collected, died before any of it was durable: all again
        (5, 6, "bc"),                    // part of it durable
        (5, 8, ""),                      // all of it durable: nothing more
    ])
    func toldOnce(_ taken: Int64?, _ total: Int64, _ expected: String) async throws {
        var files = ["status": "exit 4\n", "output": "abc"]
        if let taken { files["taken"] = String(taken) }
        let (scratch, runtime, disk) = try Self.place(files)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let (outcome, told, takenWhenTold) = try await Self.collect(runtime, disk, total: total)
        #expect(outcome?.result.exitCode == 4, "\(String(describing: outcome?.result))")
        #expect(told == expected)
        #expect(String(decoding: outcome?.output ?? [], as: UTF8.self) == "abc", "the attempt's tail (its end hooks' output) is the whole spool")
        if !expected.isEmpty { #expect(takenWhenTold == String(taken ?? total), "where the spool began, when it was told") }
        #expect(!FileManager.default.fileExists(atPath: disk), "the collected directory outlived the attempt's end")
    }

    @Test("what of a spool the history lacks, as a table", arguments: [
        (Int64?.none, Int64(0), 3), (nil, 100, 3), (10, 10, 3), (10, 11, 2), (10, 13, 0), (10, 50, 0), (10, 4, 3),
    ])
    func untold(_ taken: Int64?, _ total: Int64, _ count: Int) {
        var record = ShimRecord(exitCode: 0, signal: nil, output: Array("xyz".utf8))
        record.taken = taken
        #expect(record.untold(historyTotal: total) == Array(Array("xyz".utf8).suffix(count)))
    }
}

extension ShimAdoptedTests {
    /// A place another user made (or one anyone may write) under the shims' places holds no
    /// attempt of batond's: its status and output are not read (review s37 F1d).
    @Test("a shim directory not batond's user's, or writable by others, is not read", arguments: ["owner", "mode"])
    func plantedPlace(_ how: String) throws {
        let (scratch, _, disk) = try Self.place(["status": "exit 0\n", "output": "planted"])
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        #expect(ShimRecord.read(disk).exitCode == 0, "batond's own place is read")
        if how == "owner" {
            try #require(geteuid() == 0, "changing a directory's owner needs root")
            #expect(chown(disk, 65534, 65534) == 0)
        } else {
            #expect(chmod(disk, 0o777) == 0)
        }
        let record = ShimRecord.read(disk)
        #expect(record.exitCode == nil && record.output.isEmpty, "\(record)")
    }
}
