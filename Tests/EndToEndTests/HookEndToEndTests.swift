import Foundation
import Testing

/// `on:` hooks with real processes: what the hook run is told, `show` both ways, and a crash
/// between the outcome and the hook's start.
@Suite("End to end: hooks", .serialized, .offPool)
struct HookEndToEndTests {
    /// deploy fails with output on both streams; page, its failure hook, keeps what it was told
    /// in `OUT/hook-RUN.env` and `.out`. A page pressed by hand with `hold=yes` blocks instead, holding
    /// page's key, so that a hook's run waits queued behind it.
    static func config(out: String) -> String {
        """
        {
          socketMode: "0666",
          actions: {
            deploy: { exec: ["sh", "-c", "echo deploying $BATON_PARAM_ENV; echo step 3 failed >&2; exit 3"],
                      params: { env: { default: "prod" } }, on: { failure: "page" } },
            page: { exec: ["sh", "-c", "if [ \\"$BATON_PARAM_HOLD\\" = yes ]; then exec sleep 300; fi; env | grep '^BATON_HOOK_' | sort > \\"$OUT/hook-$BATON_RUN_ID.env\\"; cat \\"$BATON_HOOK_OUTPUT\\" > \\"$OUT/hook-$BATON_RUN_ID.out\\""],
                    env: { OUT: "\(out)" }, params: { hold: { default: "no" } }, policy: "queue", killGrace: "200ms" },
          },
        }
        """
    }

    static func scratch() throws -> String {
        let path = NSTemporaryDirectory() + "baton-hooks-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The `BATON_HOOK_*` variables hook run `run` saw, by name.
    static func told(_ out: String, run: Int) throws -> [String: String] {
        let text = try String(contentsOfFile: "\(out)/hook-\(run).env", encoding: .utf8)
        var env: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            env[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return env
    }

    static func hookFiles(_ out: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: out)) ?? []).filter { $0.hasSuffix(".env") }.sorted()
    }

    @Test("a failing action fires its failure hook, which sees BATON_HOOK_* and the output tail; show lists it both ways")
    func failureHook() throws {
        let out = try Self.scratch()
        let daemon = try Daemon(config: Self.config(out: out))
        defer { daemon.stop() }
        let failed = try daemon.baton("run", "deploy")
        #expect(failed.code != 0, "\(failed.stdout) \(failed.stderr)")
        let hook = try daemon.baton("wait", "2")
        #expect(hook.code == 0, "\(hook.stdout) \(hook.stderr)")
        let env = try Self.told(out, run: 2)
        #expect(env["BATON_HOOK_RUN_ID"] == "1" && env["BATON_HOOK_ACTION"] == "deploy" && env["BATON_HOOK_KEY"] == "deploy", "\(env)")
        #expect(env["BATON_HOOK_PHASE"] == "failure" && env["BATON_HOOK_REASON"] == "exit" && env["BATON_HOOK_EXIT_CODE"] == "3", "\(env)")
        #expect(env["BATON_HOOK_ERROR"]?.contains("3") == true && env["BATON_HOOK_EVENT"] == "failure", "\(env)")
        #expect(env["BATON_HOOK_PARAM_ENV"] == "prod", "\(env)")
        let tail = try String(contentsOfFile: "\(out)/hook-2.out", encoding: .utf8)
        #expect(tail.contains("deploying prod") && tail.contains("step 3 failed"), "\(tail)")
        let file = try #require(env["BATON_HOOK_OUTPUT"])
        #expect(!FileManager.default.fileExists(atPath: file), "the output file outlived the hook's attempt: \(file)")
        let shown = try daemon.baton("show", "2").stdout
        #expect(shown.contains("triggered by the failure hook of deploy run 1"), "\(shown)")
        let firing = try daemon.baton("show", "1").stdout
        #expect(firing.contains("hooks fired:") && firing.contains("failure → page run 2, "), "\(firing)")
        #expect(Self.hookFiles(out) == ["hook-2.env"])
        let status = try daemon.baton("status").stdout
        #expect(status.contains("\nrules:\n  deploy: on failure: page\n"), "status names the hooks: \(status)")
    }

    @Test("kill -9 between the outcome and the hook's start: after the restart the hook runs once, told what fired it")
    func crashBeforeTheHookStarts() throws {
        let out = try Self.scratch()
        let config = Self.config(out: out)
        let daemon = try Daemon(config: config)
        // Run 1 holds page's key, so the hook's run (3) waits queued, durable with run 2's failure.
        #expect(try daemon.baton("run", "page", "-p", "hold=yes", "--detach").code == 0)
        #expect(try daemon.baton("run", "deploy").code != 0)
        let queued = try daemon.baton("show", "3").stdout
        #expect(queued.contains("queued") && queued.contains("triggered by the failure hook of deploy run 2"), "\(queued)")
        daemon.crash()
        #expect(Self.hookFiles(out).isEmpty, "the hook ran before the crash")

        let restarted = try Daemon(config: config, reusing: daemon)
        // Run 1 (a `sleep 300` the restart adopted) still holds page's key: cancelling it lets the
        // hook's run start now, not when the sleep ends (this test took 300 s when it waited it out).
        #expect(try restarted.baton("cancel", "1").code == 0)
        let hook = try restarted.baton("wait", "3")
        #expect(hook.code == 0, "\(hook.stdout) \(hook.stderr)")
        let env = try Self.told(out, run: 3)
        #expect(env["BATON_HOOK_RUN_ID"] == "2" && env["BATON_HOOK_PHASE"] == "failure" && env["BATON_HOOK_EXIT_CODE"] == "3", "\(env)")
        let tail = try String(contentsOfFile: "\(out)/hook-3.out", encoding: .utf8)
        #expect(tail.contains("step 3 failed"), "the recovered hook run lost the output tail: \(tail)")
        restarted.stop()

        // A clean restart after it runs nothing again.
        let third = try Daemon(config: config, reusing: daemon, name: "third")
        defer { third.stop() }
        let history = try third.baton("history", "--json").stdout
        #expect(history.components(separatedBy: #""action" : "page""#).count == 3, "page: the hand run and one hook run: \(history)")
        #expect(Self.hookFiles(out) == ["hook-3.env"], "the hook ran more than once: \(Self.hookFiles(out))")
        let firing = try third.baton("show", "2").stdout
        #expect(firing.contains("failure → page run 3, "), "\(firing)")
    }

    @Test("kill -9 while a hook run holds its BATON_HOOK_OUTPUT file: the next start removes the file the crash left")
    func crashLeavesNoHookOutput() throws {
        let temporary = try Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: temporary) }
        let told = temporary + "/told", gate = temporary + "/gate"
        #expect(mkfifo(told, 0o600) == 0 && mkfifo(gate, 0o600) == 0)
        // shutdownGrace 1s: the restarted batond queues the hook run again and may start it before the
        // test stops it; that run then blocks writing to a FIFO nobody reads, and the 30 s default grace
        // met the harness's own 30 s wait for batond's exit (ci2 of session 24 failed so).
        let config = """
            { shutdownGrace: "1s",
              actions: { fail: { exec: ["false"], on: { failure: "page" } },
                         page: { exec: ["sh", "-c", "echo \\"$BATON_HOOK_OUTPUT\\" > \(told); cat \(gate)"], killGrace: "200ms" } } }
            """
        let daemon = try Daemon(config: config, environment: ["TMPDIR": temporary])
        #expect(try daemon.baton("run", "fail").code != 0)
        // The hook run says where its file is (the FIFO blocks it until read), then waits on the gate.
        let file = Self.readLine(fifo: told)
        #expect(FileManager.default.fileExists(atPath: file), "\(file)")
        daemon.crash()

        let restarted = try Daemon(config: config, reusing: daemon, environment: ["TMPDIR": temporary])
        defer { restarted.stop() }
        #expect(!FileManager.default.fileExists(atPath: file), "the hook output file a crash left survived the restart: \(file)")
        #expect(restarted.stderr.contains("removed 1 hook output files a previous batond left"), "\(restarted.stderr)")
    }

    /// The line a writer puts in `fifo` (a blocking open: the test waits for the hook run, no sleep).
    static func readLine(fifo: String) -> String {
        let fd = open(fifo, O_RDONLY)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}
