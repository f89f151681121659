import BatonClient
import BatonCore
import BatonStore
import Foundation
import Testing

/// Issue 41, part 1: a client waiting on runs reconnects by itself and sees nothing missing.
/// `baton watch` across a stop of batond (SIGTERM): the runs it hands over end under their shims
/// while no batond serves, the next batond records their ends (and starts the run left queued)
/// before the watch is back; the watch, watching again after the last transition it printed, is
/// sent those first: every transition printed once, each run's in order, none missing.
@Suite("End to end: watch replays what was committed while it was away", .serialized, .offPool)
struct WatchReplayEndToEndTests {
    static func config(_ directory: String) -> String {
        let wait = #"while [ ! -e \"$GO\" ]; do sleep 0.02; done; exit 3"#
        return """
            { requireUser: false, maxConcurrentRuns: 2, actions: {
                waiter: { params: { n: { pattern: "^[0-9]+$" } }, keyParams: ["n"], exec: ["sh", "-c", "\(wait)"],
                          env: { GO: "\(directory)/go" } },
                quick: { exec: ["true"] },
            } }
            """
    }

    /// (run, seq) of each transition `baton watch --json` printed, in order.
    static func printed(_ path: String) -> [String] {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let transition = object["transition"] as? [String: Any],
                  let run = transition["runID"] as? Int, let seq = transition["seq"] as? Int else { return "?" + line }
            return "\(run).\(seq)"
        }
    }

    /// Waits until both runs handed over have ended under their shims (each shim's `status`),
    /// with no batond serving: what the next batond then collects, not adopts still running.
    static func endedUnderShims(_ daemon: Daemon, count: Int = 2) async throws -> [String] {
        let shims = daemon.database + "-shims"
        func statuses() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: shims)) ?? []).compactMap { name in
                try? String(contentsOfFile: shims + "/" + name + "/status", encoding: .utf8)
            }
        }
        await Eventually.untilAwaited("\(count) statuses written: \(statuses())") { statuses().count >= count }
        return statuses()
    }

    @Test("baton watch across a stop and start: runs ended under their shims and a queued one recovered are printed once each, in order, none missing",
          .slotTimeLimit(.seconds(3 * 60)))
    func stopAndStart() async throws {
        let directory = NSTemporaryDirectory() + "baton-replay-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try Daemon(config: Self.config(directory))
        let out = daemon.directory + "/watch.out", err = daemon.directory + "/watch.err", pid = daemon.directory + "/watch.pid"
        let watching = Launched("/bin/sh", ["-c", "echo $$ > \"$4\"; exec \"$0\" --socket \"$1\" watch --json > \"$2\" 2> \"$3\"",
                                            Binaries.baton, daemon.socket, out, err, pid])
        #expect(RestartAnswerTests.waitForFile(err, containing: "watching every action").contains("watching every action"))
        for n in 1...3 { #expect(try daemon.baton("run", "waiter", "-p", "n=\(n)", "--detach").code == 0) }
        // Runs 1 and 2 load (the limit is 2), run 3 waits: the watch has printed that much.
        await Eventually.untilAwaited("the watch printed 5 transitions") { Self.printed(out).count >= 5 }
        #expect(Set(Self.printed(out)) == ["1.1", "1.2", "2.1", "2.2", "3.1"], "\(Self.printed(out))")
        daemon.stop()
        // With no batond: the two runs end under their shims.
        FileManager.default.createFile(atPath: directory + "/go", contents: nil)
        let shims = try await Self.endedUnderShims(daemon)
        #expect(shims.count == 2, "\(shims)")
        let next = try Daemon(config: Self.config(directory), reusing: daemon)
        defer { next.stop() }
        #expect(try next.baton("run", "quick").code == 0)
        // A last run, after the others settled: the watch prints its end after anything the
        // replay or the held updates could print twice (`WatchRelay` sends those first).
        _ = try RestartAnswerTests.settledRuns(next)
        #expect(try next.baton("run", "quick").code == 0)
        let runs = try RestartAnswerTests.settledRuns(next)
        #expect(runs == ["1", "2", "3", "4", "5"])
        let connection = try Connection(path: next.database, readOnly: true)
        let committed = try SurviveTests.column(connection, "SELECT run_id || '.' || seq FROM transitions ORDER BY at, run_id, seq")
        await Eventually.untilAwaited("the watch printed the last committed transition \(committed.last ?? "")") {
            Self.printed(out).contains(committed.last ?? "")
        }
        let printed = Self.printed(out)
        #expect(printed.count == committed.count, "printed \(printed), committed \(committed)")
        #expect(Set(printed) == Set(committed), "printed \(printed), committed \(committed)")
        #expect(Set(printed).count == printed.count, "none printed twice: \(printed)")
        // Each run's transitions in order.
        for run in runs {
            let mine = printed.filter { $0.hasPrefix(run + ".") }
            #expect(!mine.isEmpty && mine == (1...mine.count).map { "\(run).\($0)" }, "run \(run): \(mine)")
        }
        // The ends of runs 1 and 2, committed before the watch was back, are there.
        let ends = try SurviveTests.column(connection, "SELECT run_id || '.' || max(seq) FROM transitions WHERE run_id IN (1, 2) GROUP BY run_id")
        #expect(ends.allSatisfy(printed.contains), "ends \(ends) in \(printed)")
        let said = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        #expect(said == "watching every action; Ctrl-C to stop\n", "said once, nothing skipped: \(said)")
        let watcher = Int32(((try? String(contentsOfFile: pid, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        if watcher > 0 { kill(watcher, SIGINT) }
        #expect(try await watching.output().code == 0)
    }

    @Test("BatonClient.watch(socket:) across a stop and start: what was committed while no watch was open comes first, each transition once, none missing",
          .slotTimeLimit(.seconds(3 * 60)))
    func clientStopAndStart() async throws {
        let directory = NSTemporaryDirectory() + "baton-replay-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let daemon = try Daemon(config: Self.config(directory))
        let watched = WatchedUpdates()
        let updates = BatonClient.watch(socket: daemon.socket, started: { watched.begin() }, skipped: { _ in watched.add("skipped") })
        // How the stream ended, if it did (a failure then says why the watch saw no more).
        let ended = Locked<String?>(nil)
        let reading = Task(executorPreference: OffPoolThreads.shared) {
            do {
                for try await update in updates {
                    if let t = update.transition { watched.add("\(t.runID).\(t.seq)") }
                }
                ended.withLock { $0 = "finished" }
            } catch {
                ended.withLock { $0 = "\(error)" }
            }
        }
        defer { reading.cancel() }
        let told = { "seen \(watched.seen), watches begun \(watched.began), stream \(ended.withLock { $0 } ?? "open")" }
        #expect(await watched.wait { $0.began == 1 }, "\(told())")
        for n in 1...3 { #expect(try daemon.baton("run", "waiter", "-p", "n=\(n)", "--detach").code == 0) }
        #expect(await watched.wait { $0.seen.count >= 5 }, "\(told())")
        daemon.stop()
        FileManager.default.createFile(atPath: directory + "/go", contents: nil)
        let shims = try await Self.endedUnderShims(daemon)
        #expect(shims.count == 2, "\(shims)")
        let next = try Daemon(config: Self.config(directory), reusing: daemon)
        defer { next.stop() }
        #expect(try next.baton("run", "quick").code == 0)
        // A last run once the others settled: its end comes after anything sent twice would.
        _ = try RestartAnswerTests.settledRuns(next)
        #expect(try next.baton("run", "quick").code == 0)
        _ = try RestartAnswerTests.settledRuns(next)
        let connection = try Connection(path: next.database, readOnly: true)
        let committed = try SurviveTests.column(connection, "SELECT run_id || '.' || seq FROM transitions ORDER BY at, run_id, seq")
        let last = committed.last ?? ""
        #expect(await watched.wait { $0.seen.contains(last) }, "\(told()), committed \(committed)")
        let got = watched.seen
        #expect(got.count == committed.count && Set(got) == Set(committed), "\(told()), committed \(committed)")
        #expect(watched.began == 2, "watched again once")
    }
}
