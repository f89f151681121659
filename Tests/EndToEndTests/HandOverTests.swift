import BatonCore
import BatonStore
import Foundation
import Testing

/// Issue 41, part 1: a planned stop (SIGTERM) leaves the runs that survive restarts to their
/// shims, and the next batond adopts them.
@Suite("End to end: SIGTERM hands the runs over", .serialized, .offPool)
struct HandOverTests {
    /// A flood that writes until GO (so it writes across the hand-over), a waiter, a run that
    /// leaves a `setsid` child, and a run that does not survive restarts.
    static func config(_ directory: String) -> String {
        let wait = #"while [ ! -e \"$GO\" ]; do sleep 0.02; done"#
        let env = #"env: { GO: "\#(directory)/go", CRASHMARK: "\#(directory)" }"#
        let flood = #"seq 1 3000; i=0; while [ ! -e \"$GO\" ]; do i=$((i+1)); echo line $i; sleep 0.002; done; echo total $i >&2; exit 3"#
        return """
            { maxConcurrentRuns: 8, requireUser: false, shutdownGrace: "300ms", actions: {
                flood: { exec: ["sh", "-c", "\(flood)"], \(env) },
                waiter: { exec: ["sh", "-c", "echo before; \(wait); echo after"], \(env), policy: "reject" },
                forker: { exec: ["sh", "-c", "setsid sh -c 'sleep 30' & echo before; \(wait); echo forked; exit 7"], \(env),
                          killGrace: "200ms" },
                mortal: { exec: ["sh", "-c", "\(wait); exit 0"], \(env), survivesRestart: false, killGrace: "200ms" },
            } }
            """
    }

    @Test("SIGTERM while runs load and write: batond exits at once, leaving them loading; the next one adopts them; each ends with its true exit code and every byte of its output; the key is never run twice")
    func sigtermHandsOver() throws {
        let scratch = NSTemporaryDirectory() + "baton-handover-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let config = Self.config(scratch)
        let daemon = try Daemon(config: config)
        for action in ["flood", "waiter", "forker", "mortal"] { #expect(try daemon.baton("run", action, "--detach").code == 0) }
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("output of runs 1, 2 and 3 recorded") {
            try SurviveTests.column(connection, "SELECT count(DISTINCT run_id) FROM output_chunks").first == "3"
        }
        try daemon.waitForLog("run 4 mortal: queued → loading")
        let asked = Date()
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(within: 10) == 0)
        #expect(Date().timeIntervalSince(asked) < 5, "batond exits without waiting for the runs it hands over")
        let left = try SurviveTests.column(connection, "SELECT id || ' ' || phase || ' ' || coalesce(reason, '-') FROM runs ORDER BY id")
        #expect(left == ["1 loading -", "2 loading -", "3 loading -", "4 cancelled shutdown"], "\(left)")
        // The flood writes on meanwhile, to its shim's spool: the shim opens it at its first write
        // with no batond to read (the file another process writes, polled).
        let spool = daemon.database + "-shims/1-1/output"
        Eventually.until("the flood's shim spools its output while no batond reads it") {
            var status = stat()
            return stat(spool, &status) == 0 && status.st_size > 0
        }

        let again = try Daemon(config: config, reusing: daemon)
        let busy = try again.baton("run", "waiter", "--detach")
        #expect(busy.code == 75, "the adopted run still holds its key: \(busy)")
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        for run in 1...3 { _ = try again.baton("wait", String(run)) }

        let rows = try SurviveTests.column(connection, "SELECT id || ' ' || phase || ' ' || coalesce(exit_code, '-') || ' ' || coalesce(reason, '-') FROM runs ORDER BY id")
        #expect(rows == ["1 failure 3 exit", "2 success 0 exit", "3 failure 7 exit", "4 cancelled - shutdown"], "\(rows)")
        let flood = String(decoding: try SurviveTests.output(connection, run: 1), as: UTF8.self)
        let total = flood.split(separator: "\n").last.flatMap { $0.hasPrefix("total ") ? Int($0.dropFirst(6)) : nil }
        let count = try #require(total, "the flood's last line: \(flood.suffix(200))")
        let expected = (1...3000).map { "\($0)\n" }.joined() + (0..<count).map { "line \($0 + 1)\n" }.joined() + "total \(count)\n"
        #expect(SurviveTests.hash(Data(flood.utf8)) == SurviveTests.hash(Data(expected.utf8)), "every byte of the flood, once")
        #expect(String(decoding: try SurviveTests.output(connection, run: 2), as: UTF8.self) == "before\nafter\n")
        #expect(String(decoding: try SurviveTests.output(connection, run: 3), as: UTF8.self) == "before\nforked\n")
        #expect(try SurviveTests.column(connection, "SELECT count(*) FROM runs WHERE action = 'waiter'") == ["1"])
        #expect(again.stderr.contains("3 adopted"), "\(again.stderr)")
        again.stop()
        #expect(CrashTests.marked(scratch).isEmpty, "the setsid child was stopped with its run")
    }

    @Test("SIGTERM while a run waits to retry: batond exits at once, the run left retrying; the next batond waits out the rest of its backoff and runs the next attempt")
    func sigtermKeepsRetry() throws {
        let scratch = NSTemporaryDirectory() + "baton-handover-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let second = #"if [ -e \"$MARK\" ]; then echo second; exit 0; fi; touch \"$MARK\"; echo first; exit 1"#
        let config = """
            { requireUser: false, shutdownGrace: "30s", actions: {
                flaky: { exec: ["sh", "-c", "\(second)"], env: { MARK: "\(scratch)/mark" }, retry: { attempts: 1, backoff: "2s" } },
            } }
            """
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "flaky", "--detach").code == 0)
        try daemon.waitForLog("run 1 flaky: loading → retrying")
        let asked = Date()
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit(within: 20) == 0)
        #expect(Date().timeIntervalSince(asked) < 5, "the grace (30 s) is not waited for a run retrying")
        let connection = try Connection(path: daemon.database, readOnly: true)
        #expect(try SurviveTests.column(connection, "SELECT phase FROM runs") == ["retrying"])

        let again = try Daemon(config: config, reusing: daemon)
        #expect(try again.baton("wait", "1").code == 0)
        let rows = try SurviveTests.column(connection, "SELECT phase || ' ' || attempts FROM runs")
        #expect(rows == ["success 2"], "\(rows)")
        // The second attempt started no sooner than the backoff the history recorded.
        let due = try SurviveTests.column(connection, """
            SELECT at + json_extract(detail, '$.backoff') FROM transitions WHERE run_id = 1 AND to_phase = 'retrying'
            """).first.flatMap { Int64($0) }
        let started = try SurviveTests.column(connection, """
            SELECT at FROM transitions WHERE run_id = 1 AND to_phase = 'loading' ORDER BY seq DESC LIMIT 1
            """).first.flatMap { Int64($0) }
        #expect(due != nil && started != nil && started! >= due!, "attempt 2 at \(String(describing: started)), due \(String(describing: due))")
        #expect(String(decoding: try SurviveTests.output(connection, run: 1), as: UTF8.self) == "first\nsecond\n")
        again.stop()
    }

    @Test("SIGUSR2 restarts batond in place: the same pid execs its binary with the control socket kept; runs carry on and end with their exit codes and every byte; a client that connects during the restart is answered")
    func restartInPlace() throws {
        let scratch = NSTemporaryDirectory() + "baton-handover-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let config = Self.config(scratch).replacingOccurrences(of: "actions: {", with: "actions: { hello: { exec: [\"true\"] },")
        let daemon = try Daemon(config: config)
        for action in ["flood", "waiter"] { #expect(try daemon.baton("run", action, "--detach").code == 0) }
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("output of runs 1 and 2 recorded") {
            try SurviveTests.column(connection, "SELECT count(DISTINCT run_id) FROM output_chunks").first == "2"
        }
        let pid = daemon.process.processIdentifier
        for round in 1...3 {
            if round == 2 {
                let asked = try daemon.baton("restart")
                #expect(asked.code == 0 && asked.stdout == "restarting in place\n", "\(asked)")
            } else {
                daemon.signal(SIGUSR2)
            }
            try daemon.waitForLog("restarting in place:", count: round)
            // Pressed while batond restarts: waits in the socket's backlog, then answered by the new one.
            let pressed = try daemon.baton("run", "hello")
            #expect(pressed.code == 0, "round \(round): \(pressed)")
            try daemon.waitForLog(" ready: ", count: round + 1)
            #expect(daemon.process.isRunning && daemon.process.processIdentifier == pid)
        }
        #expect(daemon.stderr.components(separatedBy: "restarting in place:").count == 4, "\(daemon.stderr.suffix(3_000))")
        let busy = try daemon.baton("run", "waiter", "--detach")
        #expect(busy.code == 75, "the adopted run still holds its key: \(busy)")
        FileManager.default.createFile(atPath: scratch + "/go", contents: nil)
        for run in 1...2 { _ = try daemon.baton("wait", String(run)) }
        let rows = try SurviveTests.column(connection, "SELECT id || ' ' || phase || ' ' || coalesce(exit_code, '-') FROM runs WHERE action != 'hello' ORDER BY id")
        #expect(rows == ["1 failure 3", "2 success 0"], "\(rows)")
        #expect(try SurviveTests.column(connection, "SELECT count(*) FROM runs WHERE action = 'hello' AND phase = 'success'") == ["3"])
        let flood = String(decoding: try SurviveTests.output(connection, run: 1), as: UTF8.self)
        let total = flood.split(separator: "\n").last.flatMap { $0.hasPrefix("total ") ? Int($0.dropFirst(6)) : nil }
        let count = try #require(total, "the flood's last line: \(flood.suffix(200))")
        let expected = (1...3000).map { "\($0)\n" }.joined() + (0..<count).map { "line \($0 + 1)\n" }.joined() + "total \(count)\n"
        #expect(SurviveTests.hash(Data(flood.utf8)) == SurviveTests.hash(Data(expected.utf8)), "every byte of the flood, once")
        daemon.stop()
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket a restarted batond was passed goes with it")
    }

    @Test("SIGUSR2 again and again while batond restarts in place (as `baton restart`s back to back): the restart under way goes on, a SIGUSR2 during the new image's start does not kill it")
    func restartsBackToBack() throws {
        let daemon = try Daemon(config: #"{ requireUser: false, actions: { hello: { exec: ["true"] } } }"#)
        let pid = daemon.process.processIdentifier
        daemon.signal(SIGUSR2)
        let until = Date().addingTimeInterval(1.5)
        while Date() < until, daemon.process.isRunning {
            daemon.signal(SIGUSR2)
            usleep(2_000)
        }
        #expect(daemon.process.isRunning && daemon.process.processIdentifier == pid, "\(daemon.stderr.suffix(2_000))")
        try daemon.waitForLog(" ready: ", count: 2)
        #expect(try daemon.baton("run", "hello").code == 0)
        daemon.stop()
    }

    @Test("baton restart with batond down fails (exit 69) and says so; it does not say it restarts")
    func restartWithBatondDown() throws {
        let socket = NSTemporaryDirectory() + "baton-none-" + UUID().uuidString + ".sock"
        let asked = try execute(Binaries.baton, ["--socket", socket, "restart"])
        #expect(asked.code == 69 && asked.stdout.isEmpty && asked.stderr.contains("cannot reach batond"), "\(asked)")
    }

    @Test("baton run, baton wait, baton logs -f and baton run --follow ride out a restart in place: each reconnects, waits again, and prints exactly what it would have")
    func clientsRideItOut() async throws {
        let scratch = NSTemporaryDirectory() + "baton-handover-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let go = scratch + "/go"
        let daemon = try Daemon(config: """
            { requireUser: false, actions: { nap: { exec: ["sh", "-c", "echo hi; while [ ! -e \\"$GO\\" ]; do sleep 0.02; done; echo bye; exit 4"], env: { GO: "\(go)" } },
                                             fol: { exec: ["sh", "-c", "echo one; while [ ! -e \\"$GO\\" ]; do sleep 0.02; done; echo two; exit 3"], env: { GO: "\(go)" } } } }
            """)
        let running = Launched(Binaries.baton, ["--socket", daemon.socket, "run", "nap"])
        try daemon.waitForLog("run 1 nap: queued → loading")
        let waiting = Launched(Binaries.baton, ["--socket", daemon.socket, "wait", "1"])
        // `logs -f` through a pipe that marks its first line: it is attached once that is there.
        let attached = scratch + "/logging"
        let logging = Launched("/bin/bash", ["-c", #"set -o pipefail; "$0" --socket "$1" logs -f 1 | { IFS= read -r line && printf '%s\n' "$line" && : > "$2"; cat; }"#,
                                             Binaries.baton, daemon.socket, attached])
        let following = Launched(Binaries.baton, ["--socket", daemon.socket, "run", "fol", "--follow"])
        try daemon.waitForLog("run 2 fol: queued → loading")
        // Each client attached before the restart: `logs -f` has its first line; then batond
        // holds the five connections of run, wait, logs -f, run --follow and the query.
        guard Eventually.until("baton logs -f 1 printed its first line", { FileManager.default.fileExists(atPath: attached) }) else { return }
        // Five on two queries in a row: one query's connection may still be counted at the next.
        var seen = 0
        guard try Eventually.until("five connections (run, wait, logs -f, run --follow, metrics) twice in a row", {
            seen = try StopAnswerTests.connections(daemon) >= 5 ? seen + 1 : 0
            return seen >= 2
        }) else { return }
        daemon.signal(SIGUSR2)
        try daemon.waitForLog(" ready: ", count: 2)
        FileManager.default.createFile(atPath: go, contents: nil)
        let (ran, waited) = (try await running.output(), try await waiting.output())
        let fresh = try daemon.baton("wait", "1")
        #expect(fresh.stdout.contains("run 1") && fresh.code != 0, "\(fresh)")
        #expect(ran.code == fresh.code && ran.stdout == fresh.stdout, "baton run: \(ran)")
        #expect(waited.code == fresh.code && waited.stdout == fresh.stdout, "baton wait: \(waited)")
        #expect(daemon.stderr.contains("restarting in place:"))
        let logged = try await logging.output()
        #expect(logged.stdout == "hi\nbye\n" && logged.code == fresh.code, "baton logs -f: \(logged)")
        let followed = try await following.output()
        let folWait = try daemon.baton("wait", "2")
        #expect(followed.stdout == "one\ntwo\n" + folWait.stdout && followed.code == folWait.code, "baton run --follow: \(followed)")
        // Nothing said of the restart: each went on as if batond had not restarted.
        for (name, output) in [("run", ran), ("wait", waited), ("logs -f", logged), ("run --follow", followed)] {
            #expect(!output.stderr.contains("batond") && !output.stderr.contains("Error"), "baton \(name)'s stderr: \(output.stderr)")
        }
    }
}
