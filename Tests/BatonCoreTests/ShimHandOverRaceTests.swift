@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import BatonRuntime
import CBatonSystem
import Foundation
import Testing

/// A hand-over asked just as the action ends (review-shimplace4 4, review s37 F1): the shim has
/// exited by the time batond sees its pipes end, whether it saw the signal (and spooled) or not.
/// Its end is this batond's to record, with every byte: its status may be on the runtime tmpfs,
/// which a reboot erases, and a next batond may not have its action.
@Suite("Shim: a hand-over asked as the action ends", .offPool)
struct ShimHandOverRaceTests {
    /// Runs `sh -c script GATE` under the shim (its stdout, stderr and progress pipes batond's) and,
    /// in one turn of the loop (so that the pipes' end is seen only after it): with `signalFirst`,
    /// sends the hand-over signal until the shim has let go of batond's pipes; opens the gate; waits
    /// until the shim has written its status and exited; then asks the hand-over. Returns whether
    /// the attempt was kept (handed over), the probe and the attempt's shim directory; it checks
    /// that a hand-over not kept is answered once the attempt's end is told (review s37 N2).
    /// `taken`: what `DIR/taken` said as each chunk of output was told (the run's output before the
    /// attempt is 100 bytes).
    static func handOverAsEnded(_ script: String, signalFirst: Bool) async throws
        -> (kept: Bool?, probe: AttemptProbe, place: String, taken: [(told: String, taken: String?)]) {
        var (runner, directory) = try ShimTests().runner()
        let place = directory + "/7-2"
        let taken = Locked([(told: String, taken: String?)]())
        let reactor = Reactor()
        runner.reactor = reactor
        let gate = directory + "-gate"
        #expect(mkfifo(gate, 0o600) == 0)
        defer { unlink(gate) }
        var job = Job(runID: 7, action: Action(name: "t", exec: ["sh", "-c", script, gate]), attempt: 2, params: [:])
        job.outputBefore = 100
        let probe = AttemptProbe(runner, job) { event in
            guard case let .output(_, bytes) = event else { return }
            let said = try? String(contentsOfFile: place + "/taken", encoding: .utf8)
            taken.withLock { $0.append((String(decoding: bytes, as: UTF8.self), said)) }
        }
        _ = await probe.started()
        let attempt = try #require(probe.attempt as? ProcessAttempt)
        let (answers, answer) = AsyncStream<(kept: Bool, endedFirst: Bool)>.makeStream()
        reactor.post {
            let pid = attempt.pid
            if signalFirst {
                // Sent again until taken: a shim just started may not have its handler yet.
                let letGo = ShimDiskTests.within {
                    kill(pid, ProcessAttempt.handOverSignal)
                    return (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/1")) == "/dev/null"
                }
                #expect(letGo, "the shim did not take the hand-over")
            }
            let fd = open(gate, O_WRONLY)
            if fd >= 0 { close(fd) }
            let ended = ShimDiskTests.within { access(place + "/status", F_OK) == 0 && baton_has_exited(pid) != 0 }
            #expect(ended, "the shim did not end with its status in its directory")
            attempt.beginHandOver { kept in
                answer.yield((kept, probe.events.all.contains { if case .ended = $0 { true } else { false } }))
                answer.finish()
            }
        }
        var kept: Bool?
        for await value in answers {
            kept = value.kept
            #expect(value.kept || value.endedFirst, "not kept, answered before the attempt's end was told: a conductor past its grace would stop it")
        }
        return (kept, probe, place, taken.withLock { $0 })
    }

    /// The output the attempt told (what the conductor records), in order.
    static func told(_ probe: AttemptProbe) -> String {
        String(decoding: probe.events.all.flatMap { event -> [UInt8] in if case let .output(_, bytes) = event { bytes } else { [] } }, as: UTF8.self)
    }

    @Test("the shim wrote its status where batond reads and exited before the hand-over was seen: not handed over, its end recorded by this batond")
    func endedBeforeHandOver() async throws {
        let (kept, probe, place, _) = try await Self.handOverAsEnded("cat \"$0\" > /dev/null; echo done", signalFirst: false)
        defer { try? FileManager.default.removeItem(atPath: place.parentPath) }
        #expect(kept == false, "handed over: the run's end, on the tmpfs only, is left to a next batond")
        guard kept == false else { return }
        let outcome = await probe.outcome()
        #expect(outcome.result.succeeded, "\(outcome.result)")
        #expect(String(decoding: outcome.output, as: UTF8.self) == "done\n")
    }

    @Test("the shim saw the hand-over, spooled the action's last bytes and exited (its status in its directory: no -s) before batond saw its pipes end: not handed over, ended here with every byte, the spooled ones last")
    func spooledBeforeHandOverSeen() async throws {
        // Where the spool begins in the run's output (100 bytes before this attempt, "first\n" from
        // its pipes), written beside it before it is told (review s37 N3): a batond that dies before
        // the run's end removes it leaves the next one to tell only what the history lacks.
        let (kept, probe, place, taken) = try await Self.handOverAsEnded("echo first; cat \"$0\" > /dev/null; echo last; exit 3", signalFirst: true)
        defer { try? FileManager.default.removeItem(atPath: place.parentPath) }
        #expect(kept == false, "handed over: a shim that has ended is this batond's to record")
        guard kept == false else { return }
        let outcome = await probe.outcome()
        #expect(outcome.result.exitCode == 3, "\(outcome.result)")
        #expect(String(decoding: outcome.output, as: UTF8.self) == "first\nlast\n")
        #expect(Self.told(probe) == "first\nlast\n", "the pipes' bytes, then the spool's")
        // The shim may take the signal before it relays "first" (then all is spooled, one chunk):
        // the spool begins after the 100 bytes before the attempt and what the pipes gave.
        let before = taken.dropLast().map(\.told.utf8.count).reduce(100, +)
        #expect(taken.last?.told.hasSuffix("last\n") == true && taken.last?.taken == String(before), "\(taken)")
        #expect(!FileManager.default.fileExists(atPath: place), "the shim's directory outlived the attempt's end")
    }

    @Test("a progress line the hand-over cut (the shim drops progress after the signal) is not the attempt's last report (review s37 F4: 47/1 of 47/100 read as done)")
    func cutProgressLine() async throws {
        let (kept, probe, place, _) = try await Self.handOverAsEnded("printf '47/1' >&3; cat \"$0\" > /dev/null; printf '00 half\\n' >&3; echo end", signalFirst: true)
        defer { try? FileManager.default.removeItem(atPath: place.parentPath) }
        #expect(kept == false)
        guard kept == false else { return }
        let outcome = await probe.outcome()
        #expect(outcome.result.succeeded, "\(outcome.result)")
        #expect(probe.progress.isEmpty, "\(probe.progress)")
        #expect(Self.told(probe) == "end\n")
    }

    @Test("a hand-over asked while the attempt drains (its leader reaped, a leftover that ignores SIGTERM being stopped) is declined once its end is told (review s37 R2)")
    func askedWhileDraining() async throws {
        var (runner, directory) = try ShimTests().runner()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let reactor = Reactor()
        runner.reactor = reactor
        let action = Action(name: "t", exec: ["sh", "-c", "(trap '' TERM; exec sleep 30) & echo started"], killGrace: .seconds(1))
        let probe = AttemptProbe(runner, Job(runID: 7, action: action, attempt: 2, params: [:]))
        _ = await probe.started()
        let attempt = try #require(probe.attempt as? ProcessAttempt)
        func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
            await withCheckedContinuation { continuation in reactor.post { continuation.resume(returning: body()) } }
        }
        // Its leader reaped, its leftover not yet killed (a second of kill grace): draining.
        let deadline = ContinuousClock.now + .seconds(20)
        while await onLoop({ attempt.state.access { $0.machine.phase } }) != .draining, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        let (answers, answer) = AsyncStream<(kept: Bool, endedFirst: Bool)>.makeStream()
        let asked = await onLoop {
            guard attempt.state.access({ $0.machine.phase }) == .draining else { return false }
            attempt.beginHandOver { kept in
                answer.yield((kept, probe.events.all.contains { if case .ended = $0 { true } else { false } }))
                answer.finish()
            }
            return true
        }
        #expect(asked, "the attempt was not seen draining")
        guard asked else { return }
        for await value in answers {
            #expect(!value.kept)
            #expect(value.endedFirst, "declined before the attempt's end was told: a conductor past its grace would stop it")
        }
        let outcome = await probe.outcome()
        #expect(outcome.result.exitCode == 0 && outcome.result.leftovers == 1, "\(outcome.result)")
    }
}
