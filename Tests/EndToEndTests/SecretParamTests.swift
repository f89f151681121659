import BatonCore
import Foundation
import Testing

/// Issue 42, item 3: `params: { token: { secret: true } }`. A planted value reaches the process
/// and nothing else: every store and stream is searched for it, and the output kept shows `***`.
@Suite("End to end: secret params", .serialized, .offPool)
struct SecretParamTests {
    /// Prints "ready", waits for the gate, then writes the token split across writes to stdout
    /// (with a byte to stderr in between: the attempt's raw tail interleaves them) and to stderr;
    /// its first attempt of each run fails with the token in its last error line.
    static let script = """
        echo ready
        while [ ! -e "$DIR/gate" ]; do sleep 0.02; done
        printf '%s' "$BATON_PARAM_TOKEN" > "$DIR/seen-$BATON_RUN_ID"
        t="$BATON_PARAM_TOKEN"; a=$(printf %s "$t" | cut -c1-9); b=$(printf %s "$t" | cut -c10-)
        printf 'out: %s' "$a"; sleep 0.05; printf '|' >&2; sleep 0.05; printf '%s done\\n' "$b"
        printf 'err: %s' "$a" >&2; sleep 0.05; printf '%s\\n' "$b" >&2
        echo "50% checking $t" >&$BATON_PROGRESS_FD
        [ -e "$DIR/again-$BATON_RUN_ID" ] && exit 0
        touch "$DIR/again-$BATON_RUN_ID"; echo "bad token $t" >&2; exit 1
        """

    static func config(_ directory: String, metrics port: UInt16) -> String {
        """
        {
          requireUser: false,
          socketMode: "0666",
          allow: { trigger: { users: ["root"] } },
          metrics: { listen: "127.0.0.1:\(port)" },
          actions: {
            deploy: { exec: ["sh", "\(directory)/script.sh"], env: { DIR: "\(directory)" }, policy: "join",
                      retry: { attempts: 1, backoff: "10ms" }, keyParams: ["token"],
                      params: { token: { secret: true, pattern: "^[a-z0-9-]+$" } }, on: { success: "notify" } },
            notify: { policy: "queue", exec: ["sh", "-c", "env | grep ^BATON_HOOK_ > \\"$DIR/hook-$BATON_HOOK_RUN_ID\\""], env: { DIR: "\(directory)" } },
          },
        }
        """
    }

    static func temporaryDirectory() throws -> String {
        let directory = NSTemporaryDirectory() + "baton-secret-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try script.write(toFile: directory + "/script.sh", atomically: true, encoding: .utf8)
        return directory
    }

    /// Every byte of a file, as text (lossy: a search for ASCII is exact).
    static func contents(_ path: String) -> String {
        String(decoding: FileManager.default.contents(atPath: path) ?? Data(), as: UTF8.self)
    }

    @Test("a planted value: in the process's env, and nowhere in the database, its WAL, batond's log, the journal, show/history/logs/status, /metrics or the live output")
    func plantedValueNowhere() async throws {
        let directory = try Self.temporaryDirectory()
        let planted = "plant-" + UUID().uuidString.lowercased()
        let other = "other-" + UUID().uuidString.lowercased()
        let journal = try FakeJournal()
        let port = try MetricsEndToEndTests.freePort()
        let daemon = try Daemon(config: Self.config(directory, metrics: port), environment: ["BATON_JOURNAL_SOCKET": journal.path, "JOURNAL_STREAM": "stderr"])
        // However the test ends, the runs are let go (batond's stop waits for them).
        defer {
            FileManager.default.createFile(atPath: directory + "/gate", contents: nil)
            daemon.stop()
        }

        let first = try daemon.baton("run", "deploy", "-p", "token=\(planted)", "--detach", "--json")
        #expect(first.code == 0, "\(first.stderr)")
        // A trigger refused for want of access is recorded (`history --denied`), its secret masked.
        let denied = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", Binaries.baton,
                                                      "--socket", daemon.socket, "run", "deploy", "-p", "token=\(planted)", "--detach"])
        #expect(denied.code != 0, "\(denied.stdout)")
        let deniedRecords = try daemon.baton("history", "--denied", "--json")
        #expect(deniedRecords.stdout.contains("\"token\" : \"***\""), "\(deniedRecords.stdout)")
        // Single flight by the sealed key: the same value joins run 1, another value makes run 2.
        let joined = try daemon.baton("run", "deploy", "-p", "token=\(planted)", "--detach", "--json")
        #expect(joined.stdout.contains("\"joined\"") && joined.stdout.contains("\"id\" : 1"), "\(joined.stdout)")
        // From a file (its line end dropped), as a secret should come: not in the command line.
        try (other + "\n").write(toFile: directory + "/other.token", atomically: true, encoding: .utf8)
        let second = try daemon.baton("run", "deploy", "--param-file", "token=\(directory)/other.token", "--detach", "--json")
        #expect(second.stdout.contains("\"created\"") && second.stdout.contains("\"id\" : 2"), "\(second.stdout)")
        let refused = try daemon.baton("run", "deploy", "-p", "token=BAD-\(planted)", "--json")
        #expect(refused.code != 0 && !(refused.stdout + refused.stderr).contains(planted), "\(refused.stdout)\(refused.stderr)")

        // Following live from before the value is written.
        let follow = try Streaming(["--socket", daemon.socket, "logs", "-f", "1"])
        #expect(follow.waitFor("ready"))
        FileManager.default.createFile(atPath: directory + "/gate", contents: nil)
        let waited = try daemon.baton("wait", "1")
        #expect(waited.code == 0, "\(waited.stdout)\(waited.stderr)")
        _ = try daemon.baton("wait", "2")
        let streamed = follow.finish().stdout

        // It reached the process, each attempt.
        #expect(Self.contents(directory + "/seen-1") == planted)
        #expect(Self.contents(directory + "/seen-2") == other)

        // The success hooks' environments: the firing run's params as it keeps them.
        let hooks = Eventually.value("both success hooks wrote their environment", {
            ["1", "2"].map { Self.contents(directory + "/hook-" + $0) }.filter { $0.contains("BATON_HOOK_PHASE") }
        }) { $0.count >= 2 }
        #expect(hooks.count == 2 && hooks.allSatisfy { $0.contains("BATON_HOOK_PARAM_TOKEN=***") && $0.contains("hmac:") }, "\(hooks)")
        let logs = try daemon.baton("logs", "1")
        // The value's first bytes wait in the mask for the rest, so stderr's `|` comes out before them.
        #expect(logs.stdout.components(separatedBy: "out: |*** done").count == 3, "two attempts, each masked: \(logs.stdout)")
        #expect(logs.stdout.contains("err: ***") && logs.stdout.contains("bad token ***"), "\(logs.stdout)")
        #expect(streamed.contains("out: |*** done"), "\(streamed)")
        let shown = try daemon.baton("show", "1", "--json")
        #expect(shown.stdout.contains("\"token\" : \"***\"") && shown.stdout.contains("hmac:"), "\(shown.stdout)")
        #expect(shown.stdout.contains("bad token ***"), "the first attempt's error, masked: \(shown.stdout)")

        let metrics = try MetricsEndToEndTests.TCP.exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let entries = journal.entries { $0.contains { $0["BATON_RUN_ID"] == "2" && $0["BATON_PHASE"] == "success" } }
        #expect(entries.contains { ($0["MESSAGE"] ?? "").contains("*** done") }, "the journal has the masked lines")
        let seen: [(String, String)] = [
            ("database", Self.contents(daemon.database)), ("WAL", Self.contents(daemon.database + "-wal")),
            ("batond's stderr", daemon.stderr), ("journal", entries.map { $0.description }.joined()),
            ("logs", logs.stdout), ("logs -f", streamed), ("show", shown.stdout),
            ("show 2", try daemon.baton("show", "2", "--json").stdout), ("history", try daemon.baton("history", "--json").stdout),
            ("logs --json", try daemon.baton("logs", "2", "--json").stdout), ("status", try daemon.baton("status", "--json").stdout),
            ("denied", deniedRecords.stdout), ("hook environments", hooks.joined()), ("first answer", first.stdout), ("joined answer", joined.stdout), ("second answer", second.stdout), ("metrics", metrics),
        ]
        for (place, text) in seen {
            #expect(!text.contains(planted) && !text.contains(other), "\(place) holds a secret value")
            #expect(!text.contains(String(planted.prefix(9))), "\(place) holds the value's first part")
        }
        #expect(metrics.contains("baton_"), "the scrape answered: \(metrics.prefix(200))")
    }

    @Test("a queued run with a secret param that had not started when batond crashed ends failure, reason secret, at restart")
    func queuedAcrossCrash() async throws {
        let directory = try Self.temporaryDirectory()
        let config = """
            { requireUser: false, maxConcurrentRuns: 1, actions: {
                hold: { exec: ["sleep", "30"], survivesRestart: false },
                deploy: { exec: ["sh", "\(directory)/script.sh"], env: { DIR: "\(directory)" }, params: { token: { secret: true } } },
            } }
            """
        let daemon = try Daemon(config: config)
        defer { daemon.stop() }
        #expect(try daemon.baton("run", "hold", "--detach").code == 0)
        let queued = try daemon.baton("run", "deploy", "-p", "token=queued-value-1234", "--detach", "--json")
        #expect(queued.stdout.contains("\"queued\""), "\(queued.stdout)")
        daemon.crash()
        let restarted = try Daemon(config: config, reusing: daemon, name: "restarted")
        defer { restarted.stop() }
        // Recovery's writes commit after batond says ready: the history shows them a moment later.
        let shown = try Eventually.value("run 2's recovered end shown", within: 30, { try restarted.baton("show", "2", "--json") }) {
            !$0.stdout.contains("\"phase\" : \"queued\"")
        }
        #expect(shown.stdout.contains("\"phase\" : \"failure\"") && shown.stdout.contains("\"reason\" : \"secret\""), "\(shown.stdout)")
        #expect(shown.stdout.contains("kept in memory only"), "\(shown.stdout)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/seen-2"), "it never ran")
        let held = try restarted.baton("show", "1", "--json")
        #expect(held.stdout.contains("\"reason\" : \"interrupted\""), "the run before it is recovered as before: \(held.stdout)")
        #expect(!Self.contents(daemon.database + "-wal").contains("queued-value-1234"))
    }

    @Test("no key file until an action has a secret param; a reload that adds one makes it (mode 0600), the same after a restart")
    func keyFile() async throws {
        let plain = #"{ requireUser: false, actions: { hello: { exec: ["true"] } } }"#
        let daemon = try Daemon(config: plain)
        defer { daemon.stop() }
        let keyPath = daemon.database + "-secrets.key"
        #expect(!FileManager.default.fileExists(atPath: keyPath), "a batond without secret params makes no key")
        let secret = #"{ requireUser: false, actions: { hello: { exec: ["true"] }, deploy: { exec: ["true"], keyParams: ["token"], params: { token: { secret: true } } } } }"#
        try secret.write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        #expect(try daemon.baton("reload").code == 0)
        #expect(FileManager.default.fileExists(atPath: keyPath), "the reload made the key, before any trigger needs it")
        let first = try daemon.baton("run", "deploy", "-p", "token=abcd", "--json")
        #expect(first.code == 0, "\(first.stdout)\(first.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: keyPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600 && (attributes[.size] as? Int) == 32)
        let key = { (text: String) in text.split(separator: "\n").first { $0.contains("\"key\"") }.map(String.init) ?? "none" }
        daemon.stop()
        let restarted = try Daemon(config: secret, reusing: daemon, name: "restarted")
        defer { restarted.stop() }
        let again = try restarted.baton("run", "deploy", "-p", "token=abcd", "--json")
        #expect(key(again.stdout) == key(first.stdout) && key(first.stdout).contains("hmac:"), "the same value, the same key across a restart")
        let other = try restarted.baton("run", "deploy", "-p", "token=abce", "--json")
        #expect(key(other.stdout) != key(first.stdout))
    }

    @Test("a key file others may read: the reload that adds the first secret param is refused naming it, the old config kept; a stale temporary file is no obstacle")
    func unsafeKeyFile() async throws {
        let plain = #"{ requireUser: false, actions: { hello: { exec: ["true"] } } }"#
        let daemon = try Daemon(config: plain)
        defer { daemon.stop() }
        let keyPath = daemon.database + "-secrets.key"
        #expect(FileManager.default.createFile(atPath: keyPath, contents: Data(repeating: 7, count: 32), attributes: [.posixPermissions: 0o644]))
        let secret = #"{ requireUser: false, actions: { hello: { exec: ["true"] }, deploy: { exec: ["true"], params: { token: { secret: true } } } } }"#
        try secret.write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let refused = try daemon.baton("reload")
        #expect(refused.code != 0 && (refused.stdout + refused.stderr).contains(keyPath), "\(refused.stdout)\(refused.stderr)")
        let unknown = try daemon.baton("run", "deploy", "-p", "token=abcd")
        #expect(unknown.code != 0, "the old config is kept: no action deploy")
        // Removed, with a temporary file of the old name (`.PID.tmp`) left as by a crash: made anew.
        try FileManager.default.removeItem(atPath: keyPath)
        FileManager.default.createFile(atPath: keyPath + ".\(daemon.process.processIdentifier).tmp", contents: Data())
        #expect(try daemon.baton("reload").code == 0)
        #expect(try daemon.baton("run", "deploy", "-p", "token=abcd").code == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: keyPath)
        #expect((attributes[.posixPermissions] as? Int) == 0o600 && (attributes[.size] as? Int) == 32)
    }
}
