import BatonClient
import BatonCore
import BatonIPC
import BatonStore
import Foundation
import Testing

/// Issue 41: what a restart in place owes the requests it took. The old batond stops reading at
/// once, answers every request it read (a trigger's commit included), then sends
/// `{"restarting":true}` and closes: a request with no answer before that line was never taken,
/// and the CLI sends it again to the new batond. So no trigger is told `unavailable` while its
/// run exists, and none makes two runs.
@Suite("End to end: a restart in place answers what it took", .serialized, .offPool)
struct RestartAnswerTests {
    static let config = #"""
        { requireUser: false, maxConcurrentRuns: 2, actions: {
            job: { params: { n: { pattern: "^[0-9]+$" } }, keyParams: ["n"], policy: "reject", exec: ["true"] },
        } }
        """#

    static func trigger(_ n: Int) -> [UInt8] {
        Array(#"{"id":\#(n),"op":"trigger","action":"job","params":{"n":"\#(n)"},"detach":true}"#.utf8) + [10]
    }

    /// The runs in the history, once none is unfinished (the new batond ran what it was handed).
    static func settledRuns(_ daemon: Daemon) throws -> [String] {
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("no run unfinished", within: 60) {
            try SurviveTests.column(connection, "SELECT count(*) FROM runs WHERE phase NOT IN ('success', 'failure', 'cancelled')") == ["0"]
        }
        return try SurviveTests.column(connection, "SELECT id FROM runs ORDER BY id")
    }

    @Test("20,000 triggers pipelined on one connection, SIGUSR2 while they are committed: each one read is answered with its run before the restarting line, the line is the last, and no run is without an answer")
    func pipelinedTriggers() throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let raw = try HostileTests.Raw(daemon.socket)
        let count = 20_000
        let lines = (1...count).flatMap(Self.trigger)
        // Sent by a thread of its own: batond stops reading at the restart, and the send then
        // waits until the connection closes.
        let fd = raw.fd
        let sender = Thread {
            var sent = 0
            while sent < lines.count {
                let n = lines.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + sent, lines.count - sent, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                sent += n
            }
        }
        sender.start()
        // Some answers are in (so the restart meets triggers being committed), then the restart.
        try daemon.waitForLog("run 20 job n=20: ")
        daemon.signal(SIGUSR2)
        let text = raw.readToEnd()
        try daemon.waitForLog(" ready: ", count: 2)
        let answers = text.split(separator: "\n").map(String.init)
        #expect(answers.last == #"{"restarting":true}"#, "the last line: \(answers.last ?? "none")")
        var answered: [Int: Int64] = [:]
        for line in answers.dropLast() {
            let response = try JSONDecoder().decode(Response.self, from: Data(line.utf8))
            guard case let .number(id)? = response.id, response.ok == true, let run = response.run?.id else {
                Issue.record("not a trigger's answer: \(line)")
                continue
            }
            answered[Int(id)] = run
        }
        #expect(answered.count > 20 && answered.count < count, "answered before the restart: \(answered.count)")
        // Nothing triggers after the restart: the runs the history holds are those the old batond made.
        let runs = try SurviveTests.column(try Connection(path: daemon.database, readOnly: true), "SELECT id FROM runs ORDER BY id")
        #expect(runs == answered.values.sorted().map(String.init), "a run for every answer, an answer for every run: \(runs.count) runs, \(answered.count) answers")
    }

    @Test("baton run pressed without a pause from four clients (one waiting for each run, three --detach) across three restarts in place: every press answered with its run id (exit 0), one run per press, none without a press")
    func pressesAcrossRestarts() throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let pressed = Locked<[(n: Int, output: Output)]>([])
        let stop = Locked(false)
        let group = DispatchGroup()
        for client in 0..<4 {
            DispatchQueue.global().async(group: group) {
                var n = client
                while !stop.withLock({ $0 }) {
                    n += 4
                    // Client 0 waits for each run's end (its trigger follows the run); the others detach.
                    let arguments = ["run", "job", "-p", "n=\(n)"] + (client == 0 ? ["--json"] : ["--detach"])
                    guard let output = try? execute(Binaries.baton, ["--socket", daemon.socket] + arguments) else { continue }
                    pressed.withLock { $0.append((n, output)) }
                }
            }
        }
        for round in 1...3 {
            // Presses answered between the restarts (a loaded machine presses slowly).
            Eventually.until("\(round * 6) presses answered before restart \(round)") { pressed.withLock { $0.count } >= round * 6 }
            daemon.signal(SIGUSR2)
            try daemon.waitForLog(" ready: ", count: round + 1)
        }
        // Presses answered by the last image too: eight more after its ready line, of which at most
        // four (one a client) were under way at the restart and may be answered by either image.
        let atLast = pressed.withLock { $0.count }
        Eventually.until("presses answered after the last restart") { pressed.withLock { $0.count } >= atLast + 8 }
        stop.withLock { $0 = true }
        group.wait()
        let presses = pressed.withLock { $0 }
        let refused = presses.filter { $0.output.code != 0 }
        #expect(refused.isEmpty, "\(refused.count) presses not answered: \(refused.prefix(3).map { "n=\($0.n): \($0.output)" })")
        let ids = presses.compactMap { press -> Int64? in
            if let id = Int64(press.output.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) { return id }
            let json = (try? JSONSerialization.jsonObject(with: Data(press.output.stdout.utf8))) as? [String: Any]
            return ((json?["run"] as? [String: Any])?["id"] as? NSNumber)?.int64Value
        }
        #expect(ids.count == presses.count, "each press printed its run")
        #expect(Set(ids).count == ids.count, "one run per press")
        #expect(try Self.settledRuns(daemon) == ids.sorted().map(String.init), "every run is a press's, every press has its run")
        #expect(presses.count >= 18, "presses: \(presses.count)")
    }

    @Test("the executable made not executable, then removed: baton restart fails (non-zero) saying why, SIGUSR2 is refused in the log, and batond serves on, same pid")
    func executableGone() throws {
        let directory = NSTemporaryDirectory() + "baton-reexec-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let binary = directory + "/batond"
        try installExecutable(copying: Binaries.batond, at: binary)
        let configPath = directory + "/baton.json5"
        try #"{ requireUser: false, actions: { hello: { exec: ["true"] } } }"#.write(toFile: configPath, atomically: true, encoding: .utf8)
        let daemon = try Daemon(binary: binary, configPath: configPath, directory: directory)
        defer { daemon.stop() }
        let pid = daemon.process.processIdentifier
        chmod(binary, 0o644)
        let asked = try daemon.baton("restart")
        #expect(asked.code != 0 && asked.stdout.isEmpty && asked.stderr.contains("\(binary) is not executable"), "\(asked)")
        unlink(binary)
        daemon.signal(SIGUSR2)
        try daemon.waitForLog("restart in place refused: \(binary): No such file or directory; batond serves on")
        #expect(daemon.process.isRunning && daemon.process.processIdentifier == pid, "\(daemon.stderr.suffix(1_000))")
        let pressed = try daemon.baton("run", "hello")
        #expect(pressed.code == 0, "\(pressed)")
        #expect(!daemon.stderr.contains("restarting in place"), "nothing was stopped: \(daemon.stderr.suffix(1_000))")
    }

    /// Waits until the file holds `text` (30 s at most); what it holds.
    static func waitForFile(_ path: String, containing text: String, within seconds: TimeInterval = 30) -> String {
        Eventually.value("\(path) holding \(text)", within: seconds, { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }) { $0.contains(text) }
    }

    @Test("baton watch across a restart in place and a stop and start: batond's restarting line ends the watch, which is made again on the next batond, with no error; transitions before and after are printed")
    func watchRidesItOut() async throws {
        let daemon = try Daemon(config: Self.config)
        let out = daemon.directory + "/watch.out", err = daemon.directory + "/watch.err", pid = daemon.directory + "/watch.pid"
        let watching = Launched("/bin/sh", ["-c", "echo $$ > \"$4\"; exec \"$0\" --socket \"$1\" watch job > \"$2\" 2> \"$3\"", Binaries.baton, daemon.socket, out, err, pid])
        #expect(Self.waitForFile(err, containing: "watching job").contains("watching job"))
        #expect(try daemon.baton("run", "job", "-p", "n=1").code == 0)
        #expect(Self.waitForFile(out, containing: "loading → success").contains("run 1 "))
        daemon.signal(SIGUSR2)
        try daemon.waitForLog(" ready: ", count: 2)
        #expect(try daemon.baton("run", "job", "-p", "n=2").code == 0)
        let printed = Self.waitForFile(out, containing: "run 2  job n=2  loading → success")
        #expect(printed.contains("run 2  job n=2  loading → success"), "the watch after the restart: \(printed)")
        let said = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        #expect(said == "watching job; Ctrl-C to stop\n", "said once, nothing else: \(said)")
        // A plain stop ends the watch the same way; it waits for the next batond on the socket.
        daemon.stop()
        let next = try Daemon(config: Self.config, reusing: daemon)
        // The watch connects again after a pause of its own (the socket was gone for a moment): a
        // run that ended before it did is not replayed, so runs are pressed until one is printed.
        // Runs 1 and 2 printed before: the end of a run pressed after the stop (n ≥ 3) must be printed.
        var n = 2
        try Eventually.until("the watch after the stop and start prints a run: \((try? String(contentsOfFile: out, encoding: .utf8)) ?? "")", within: 60) {
            let text = (try? String(contentsOfFile: out, encoding: .utf8)) ?? ""
            if (3...max(3, n)).contains(where: { text.contains("job n=\($0)  loading → success") }) { return true }
            n += 1
            let pressed = try next.baton("run", "job", "-p", "n=\(n)")
            #expect(pressed.code == 0, "\(pressed)")
            return false
        }
        #expect(((try? String(contentsOfFile: err, encoding: .utf8)) ?? "") == "watching job; Ctrl-C to stop\n")
        // Ctrl-C ends it (exit 0).
        let watcher = Int32(((try? String(contentsOfFile: pid, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        #expect(watcher > 0)
        if watcher > 0 { kill(watcher, SIGINT) }
        #expect(try await watching.output().code == 0)
        next.stop()
    }

    @Test("BatonClient.watch(socket:) across a restart in place: the watch is made again on the new batond, no error; runs before and after are seen",
          .slotTimeLimit(.seconds(3 * 60)))
    func clientWatchRidesItOut() async throws {
        let daemon = try Daemon(config: Self.config)
        defer { daemon.stop() }
        let began = Locked(0)
        let updates = BatonClient.watch(action: "job", socket: daemon.socket) { began.withLock { $0 += 1 } }
        let seen = Task(executorPreference: OffPoolThreads.shared) {
            var ended: [Int64] = []
            for try await update in updates where update.run.phase == .success {
                ended.append(update.run.id)
                if ended.count == 2 { break }
            }
            return ended
        }
        // The watch connects and reads on a thread of its own (`ReconnectingWatch`), and this test
        // reads its stream off the pool: no wait here races the cooperative pool's queue.
        await Eventually.untilAwaited("the watch made") { began.withLock { $0 } >= 1 }
        #expect(try daemon.baton("run", "job", "-p", "n=1").code == 0)
        daemon.signal(SIGUSR2)
        try daemon.waitForLog(" ready: ", count: 2)
        guard await Eventually.untilAwaited("the watch made again after the restart", { began.withLock { $0 } >= 2 }) else {
            seen.cancel()
            return
        }
        #expect(try daemon.baton("run", "job", "-p", "n=2").code == 0)
        #expect(try await seen.value == [1, 2])
        #expect(began.withLock { $0 } == 2, "watched again once")
    }
}
