import BatonCore
import BatonIPC
import BatonStore
import Foundation
import Testing

@Suite("End to end: shutdown, reload, store faults and retention", .serialized, .offPool)
struct LifecycleTests {
    /// The runs are ones that do not survive restarts: those that do are handed to their shims (`HandOverTests`).
    @Test("SIGTERM: new triggers get shutting_down, a run that ends within the grace succeeds, the rest are cancelled (shutdown); queued runs wait for the next start")
    func gracefulShutdown() throws {
        let gate = try FifoGate()
        let marker = UUID().uuidString
        let config = """
            {
              maxConcurrentRuns: 2, shutdownGrace: "5s",
              actions: {
                long: { exec: ["sh", "-c", "sleep 30 & wait"], env: { CRASHMARK: "\(marker)" }, survivesRestart: false },
                short: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" }, survivesRestart: false },
                later: { exec: ["true"] },
              },
            }
            """
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "long", "-d").stdout == "1\n")
        #expect(try daemon.baton("run", "short", "-d").stdout == "2\n")
        #expect(try daemon.baton("run", "later", "-d").stdout == "3\n")   // over the limit: stays queued
        try daemon.waitForLog("run 1 long: queued → loading")
        try daemon.waitForLog("run 2 short: queued → loading")
        daemon.signal(SIGTERM)
        try daemon.waitForLog("stopping:")
        // The grace must outlast this CLI call (slow under ThreadSanitizer): the gate is released
        // within it, or `short` is stopped with nobody left to read the gate.
        let refused = try daemon.baton("run", "later")
        #expect(refused.code == 75)
        #expect(refused.stderr.contains("shutting down"))
        gate.release()
        #expect(daemon.waitForExit() == 0)

        let rows = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT id, phase, coalesce(reason, '-') FROM runs ORDER BY id"])
        #expect(rows.stdout == "1|cancelled|shutdown\n2|success|exit\n3|queued|-\n")
        #expect(CrashTests.marked(marker).isEmpty)

        let next = try Daemon(config: config, reusing: daemon)
        #expect(try Client(path: next.socket).call(Request(op: .wait, run: 3)).run?.phase == .success)
    }

    @Test("a second SIGTERM ends the grace at once")
    func secondSignal() throws {
        let daemon = try Daemon(config: #"{ shutdownGrace: "1h", actions: { long: { exec: ["sleep", "30"], survivesRestart: false } } }"#)
        #expect(try daemon.baton("run", "long", "-d").code == 0)
        try daemon.waitForLog("run 1 long: queued → loading")
        daemon.signal(SIGTERM)
        try daemon.waitForLog("stopping:")
        daemon.signal(SIGINT)
        #expect(daemon.waitForExit() == 0)
        let rows = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT phase, reason FROM runs"])
        #expect(rows.stdout == "cancelled|shutdown\n")
    }

    @Test("SIGHUP and baton reload: a bad config is refused naming the field and the old one stays; a good one applies, and runs of removed actions finish")
    func reload() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: """
            { actions: { a: { exec: ["true"] }, slow: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" } } } }
            """)
        #expect(try daemon.baton("run", "slow", "-d").stdout == "1\n")
        try daemon.waitForLog("run 1 slow: queued → loading")

        try #"{ actions: { a: { exec: ["true"], polcy: "join" } } }"#.write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        try daemon.waitForLog("reload refused")
        #expect(daemon.stderr.contains("actions.a.polcy: unknown field"))
        let refused = try daemon.baton("reload")
        #expect(refused.code != 0)
        #expect(refused.stderr.contains("actions.a.polcy"))
        #expect(try daemon.baton("run", "a").code == 0)

        try #"{ actions: { a: { exec: ["true"] }, b: { exec: ["sh", "-c", "echo from b"] } } }"#.write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        try daemon.waitForLog("reloaded")
        #expect(try daemon.baton("run", "b").code == 0)
        #expect(try daemon.baton("status").stdout.contains("removed from the config"))
        gate.release()
        #expect(try Client(path: daemon.socket).call(Request(op: .wait, run: 1)).run?.phase == .success)
        #expect(try daemon.baton("run", "slow").code == 2)
        #expect(try daemon.baton("reload").code == 0)
    }

    @Test("a SIGHUP while batond starts is not lost: batond lives, and the reload is done once it serves")
    func reloadWhileStarting() throws {
        let directory = NSTemporaryDirectory() + "baton-hup-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/baton.json5", socket = directory + "/baton.sock"
        try #"{ actions: { a: { exec: ["true"] } } }"#.write(toFile: config, atomically: true, encoding: .utf8)
        let batond = try Spawned([Binaries.batond, "--config", config, "--socket", socket, "--database", directory + "/history.sqlite"])
        // batond has read its config and begun to start its parts once SIGHUP leaves its default
        // disposition (caught, or ignored as it was: then this reload was lost). The signal goes at
        // once, while the history is still being opened, before batond says it is ready.
        Eventually.until("batond handles SIGHUP (/proc/\(batond.pid)/status SigCgt)") { Self.hangupHandled(batond.pid) }
        try #"{ actions: { a: { exec: ["true"] }, b: { exec: ["true"] } } }"#.write(toFile: config, atomically: true, encoding: .utf8)
        kill(batond.pid, SIGHUP)
        let log = batond.readStderr { $0.contains("reloaded ") || $0.contains("reload refused") }
        #expect(log.contains("ready") && log.contains("reloaded "), "\(log)")
        #expect(try execute(Binaries.baton, ["--socket", socket, "run", "b"]).code == 0)
        batond.stop()
    }

    @Test("a run's exit wakes no idle thread of batond (its main thread blocks SIGCHLD), and an action starts with no signal blocked or pending")
    func childExitsWakeNoIdleThread() throws {
        let daemon = try Daemon(config: """
            { actions: { t: { exec: ["true"] }, mask: { exec: ["grep", "-E", "^(SigBlk|SigPnd|ShdPnd):", "/proc/self/status"] } } }
            """)
        let pid = daemon.process.processIdentifier
        #expect(try daemon.baton("run", "t").code == 0)
        let before = try #require(ProcStatus.number("voluntary_ctxt_switches", of: pid, thread: pid))
        for _ in 0..<40 { #expect(try daemon.baton("run", "t").code == 0) }
        let woken = try #require(ProcStatus.number("voluntary_ctxt_switches", of: pid, thread: pid)) - before
        // Each exit used to wake it once (SIGCHLD goes to the one thread that does not block it).
        #expect(woken < 10, "batond's main thread woke \(woken) times during 40 runs")
        #expect(try daemon.baton("run", "mask").code == 0)
        // Run 42: after the 41 runs of t.
        let lines = try daemon.baton("logs", "42").stdout.split(separator: "\n").map { $0.split(separator: "\t").last.map(String.init) ?? "" }
        #expect(lines == ["0000000000000000", "0000000000000000", "0000000000000000"], "\(lines)")
    }

    /// Whether SIGHUP's disposition in `pid` is no longer the default (`SigIgn` or `SigCgt` in /proc).
    static func hangupHandled(_ pid: pid_t) -> Bool {
        let handled = (ProcStatus.signals("SigIgn", of: pid) ?? 0) | (ProcStatus.signals("SigCgt", of: pid) ?? 0)
        return handled & (1 << (UInt64(SIGHUP) - 1)) != 0
    }

    @Test("another process holding the write lock: triggers and transitions wait and are all written")
    func busyLock() throws {
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"], policy: "join" } } }"#)
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        holder.arguments = ["-c", """
            import sqlite3, sys, time
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute('BEGIN IMMEDIATE')
            print('locked', flush=True)
            time.sleep(1.5)
            c.execute('COMMIT')
            """, daemon.database]
        let out = Pipe()
        holder.standardOutput = out
        try holder.run()
        let line = String(decoding: out.fileHandleForReading.availableData, as: UTF8.self)
        #expect(line.hasPrefix("locked"))
        let answers = Collected<Int32>()
        inParallel(5) { _ in answers.append((try? daemon.baton("run", "a").code) ?? -1) }
        holder.waitUntilExit()
        #expect(answers.all == [0, 0, 0, 0, 0])
        let rows = try execute("/usr/bin/sqlite3", [daemon.database,
            "SELECT count(*) FROM runs WHERE phase = 'success'; SELECT count(*) FROM transitions; SELECT count(*) FROM runs"])
        let counts = rows.stdout.split(separator: "\n").compactMap { Int($0) }
        #expect(counts.count == 3 && counts[0] == counts[2] && counts[1] == 3 * counts[2])
    }

    @Test("a full disk: new triggers get store_unavailable, reads still answer, a run's end waits in memory and is written when space returns")
    func fullDisk() throws {
        let mount = try SmallDisk.mount("baton-full")
        defer { SmallDisk.unmount(mount) }
        let gate = try FifoGate()
        let daemon = try Daemon(config: """
            { actions: {
                a: { exec: ["true"] },
                gated: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" } } } }
            """, database: mount + "/history.sqlite")
        #expect(try daemon.baton("run", "gated", "-d").stdout == "1\n")
        try daemon.waitForLog("run 1 gated: queued → loading")

        // Fill the filesystem.
        _ = try execute("/usr/bin/dd", ["if=/dev/zero", "of=\(mount)/filler", "bs=4096"])
        var refusal: Response?
        for _ in 0..<5_000 {
            let answer = try Client(path: daemon.socket).call(Request(op: .trigger, action: "a", detach: true))
            if answer.ok == false { refusal = answer; break }
        }
        #expect(refusal?.error?.code == .storeUnavailable)
        #expect(refusal?.error?.message.contains("full") == true, "\(String(describing: refusal?.error))")
        #expect(try daemon.baton("status").code == 0)
        #expect(try daemon.baton("history", "--limit", "1").code == 0)

        gate.release()   // run 1 ends while its end cannot be written
        // Until the end is written, the run shows its outcome in status, still in flight.
        try Eventually.value("run 1's outcome in status while its end waits to be written", within: 30, {
            try Client(path: daemon.socket).call(Request(op: .status)).actions?.flatMap { $0.inFlight ?? [] }.first { $0.id == 1 }?.phase
        }) { $0 == .success }
        let before = try execute("/usr/bin/sqlite3", [mount + "/history.sqlite", "SELECT phase FROM runs WHERE id = 1"])
        #expect(before.stdout == "loading\n")
        try FileManager.default.removeItem(atPath: mount + "/filler")
        #expect(try Client(path: daemon.socket).call(Request(op: .wait, run: 1)).run?.phase == .success)
        #expect(try daemon.baton("run", "a").code == 0)
        daemon.stop()
        let rows = try execute("/usr/bin/sqlite3", [mount + "/history.sqlite",
            "SELECT phase FROM runs WHERE id = 1; PRAGMA integrity_check"])
        #expect(rows.stdout == "success\nok\n")
    }

    @Test("a corrupt database at start: a clear error, exit 1, and the file is left as it was")
    func corruptDatabase() throws {
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"] } } }"#)
        daemon.stop()
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try garbage.write(to: URL(fileURLWithPath: daemon.database))
        try? FileManager.default.removeItem(atPath: daemon.database + "-wal")
        let result = try execute(Binaries.batond, ["--config", daemon.configPath, "--socket", daemon.socket, "--database", daemon.database])
        #expect(result.code == 1)
        #expect(result.stderr.contains(daemon.database))
        #expect(result.stderr.lowercased().contains("not a database") || result.stderr.lowercased().contains("corrupt"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: daemon.database)) == garbage)
    }

    @Test("retention: baton prune --dry-run counts, baton prune removes exactly the runs beyond the per-action limit")
    func prune() throws {
        let daemon = try Daemon(config: """
            { retention: { maxRunsPerAction: 100 }, actions: { a: { exec: ["echo", "hi"], retention: { maxRunsPerAction: 2 } }, b: { exec: ["true"] } } }
            """)
        for _ in 0..<5 { #expect(try daemon.baton("run", "a").code == 0) }
        for _ in 0..<3 { #expect(try daemon.baton("run", "b").code == 0) }
        let dry = try daemon.baton("prune", "--dry-run")
        #expect(dry.stdout == "would remove 3 runs (9 B of output): a 3\n")
        let real = try daemon.baton("prune")
        #expect(real.stdout == "removed 3 runs: a 3\n")
        let rows = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT group_concat(id) FROM runs; SELECT count(*) FROM transitions"])
        #expect(rows.stdout == "4,5,6,7,8\n15\n")
        #expect(try daemon.baton("prune").stdout == "nothing to remove\n")

        // At start, batond applies retention itself.
        daemon.stop()
        let next = try Daemon(config: #"{ actions: { a: { exec: ["true"] }, b: { exec: ["true"], retention: { maxRunsPerAction: 1 } } } }"#,
                              reusing: daemon)
        try next.waitForLog("retention removed 2 ended runs")
        let left = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT group_concat(id) FROM runs"])
        #expect(left.stdout == "4,5,8\n")
    }

    @Test("batond --check-config: exit 0 naming the actions, or exit 1 with every error and its field")
    func checkConfig() throws {
        let good = try execute(Binaries.batond, ["--check-config", URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().appendingPathComponent("../../examples/baton.json5").standardizedFileURL.path])
        #expect(good.code == 0)
        #expect(good.stdout.contains("ok, 5 actions"))
        let file = NSTemporaryDirectory() + "baton-bad-\(UUID().uuidString).json5"
        try #"{ actions: { a: { exec: [], policy: "maybe" } }, maxConcurrentRuns: "two" }"#.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let bad = try execute(Binaries.batond, ["--check-config", file])
        #expect(bad.code == 1)
        for field in ["actions.a.exec", "actions.a.policy", "maxConcurrentRuns"] {
            #expect(bad.stderr.contains("\(file): \(field)"), "\(bad.stderr)")
        }
    }
}
