@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import BatonRuntime
import CBatonSystem
import Foundation
import Testing

/// A hand-over asked just as the action ends (review-shimplace4 4): the shim has looked for the
/// signal for the last time, takes batond for its reader and writes its status in its directory
/// (the runtime tmpfs, which a reboot erases), then exits. batond sees its pipes end, as at a
/// hand-over: the attempt must not be left to the next batond but end here, recorded.
@Suite("Shim: a hand-over asked as the action ends", .offPool)
struct ShimHandOverRaceTests {
    @Test("the shim wrote its status where batond reads and exited before the hand-over was seen: not handed over, its end recorded by this batond")
    func endedBeforeHandOver() async throws {
        var (runner, directory) = try ShimTests().runner()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reactor = Reactor()
        runner.reactor = reactor
        let gate = directory + "-gate"
        #expect(mkfifo(gate, 0o600) == 0)
        defer { unlink(gate) }
        let probe = AttemptProbe(runner, Job(runID: 7, action: Action(name: "t", exec: ["sh", "-c", "cat \"$0\" > /dev/null; echo done", gate]),
                                             attempt: 2, params: [:]))
        _ = await probe.started()
        let attempt = try #require(probe.attempt as? ProcessAttempt)
        let (answers, answer) = AsyncStream<Bool>.makeStream()
        let status = directory + "/7-2/status"
        // The loop is held while the action ends and its shim writes its status and exits, and the
        // hand-over is asked in that same turn: the pipes' end is seen only after it.
        reactor.post {
            let fd = open(gate, O_WRONLY)
            if fd >= 0 { close(fd) }
            let ended = ShimDiskTests.within { access(status, F_OK) == 0 && baton_has_exited(attempt.pid) != 0 }
            #expect(ended, "the shim did not end with its status in its directory")
            attempt.beginHandOver { kept in
                answer.yield(kept)
                answer.finish()
            }
        }
        var kept: Bool?
        for await value in answers { kept = value }
        #expect(kept == false, "handed over: the run's end, on the tmpfs only, is left to a next batond")
        guard kept == false else { return }
        let outcome = await probe.outcome()
        #expect(outcome.result.succeeded, "\(outcome.result)")
        #expect(String(decoding: outcome.output, as: UTF8.self) == "done\n")
    }

    @Test("the shim saw the hand-over, spooled the action's last bytes and exited (its status in its directory: no -s) before batond saw its pipes end: not handed over, ended here with every byte, the spooled ones last")
    func spooledBeforeHandOverSeen() async throws {
        var (runner, directory) = try ShimTests().runner()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reactor = Reactor()
        runner.reactor = reactor
        let gate = directory + "-gate"
        #expect(mkfifo(gate, 0o600) == 0)
        defer { unlink(gate) }
        let probe = AttemptProbe(runner, Job(runID: 7, action: Action(name: "t", exec: ["sh", "-c", "echo first; cat \"$0\" > /dev/null; echo last; exit 3", gate]),
                                             attempt: 2, params: [:]))
        _ = await probe.started()
        let attempt = try #require(probe.attempt as? ProcessAttempt)
        let (answers, answer) = AsyncStream<Bool>.makeStream()
        let place = directory + "/7-2"
        // The loop is held while the shim takes the hand-over (its ends of batond's pipes are
        // /dev/null; the signal sent until it has its handler), the action writes its last line
        // (spooled) and ends, and the shim writes its status and exits; the hand-over is asked in
        // that same turn: the pipes' end is seen after.
        reactor.post {
            let pid = attempt.pid
            let letGo = ShimDiskTests.within {
                kill(pid, ProcessAttempt.handOverSignal)
                return (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/1")) == "/dev/null"
            }
            #expect(letGo, "the shim did not take the hand-over")
            let fd = open(gate, O_WRONLY)
            if fd >= 0 { close(fd) }
            let ended = ShimDiskTests.within { access(place + "/output", F_OK) == 0 && access(place + "/status", F_OK) == 0 && baton_has_exited(pid) != 0 }
            #expect(ended, "the shim did not end with its spool and status in its directory")
            attempt.beginHandOver { kept in
                answer.yield(kept)
                answer.finish()
            }
        }
        var kept: Bool?
        for await value in answers { kept = value }
        #expect(kept == false, "handed over: a shim that has ended is this batond's to record")
        guard kept == false else { return }
        let outcome = await probe.outcome()
        #expect(outcome.result.exitCode == 3, "\(outcome.result)")
        #expect(String(decoding: outcome.output, as: UTF8.self) == "first\nlast\n")
        // What the conductor records: the pipes' bytes, then the spool's.
        let told = probe.events.all.flatMap { event -> [UInt8] in if case let .output(_, bytes) = event { bytes } else { [] } }
        #expect(String(decoding: told, as: UTF8.self) == "first\nlast\n")
        #expect(!FileManager.default.fileExists(atPath: place), "the shim's directory outlived the attempt's end")
    }
}
