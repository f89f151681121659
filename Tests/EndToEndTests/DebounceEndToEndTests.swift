import BatonCore
import BatonIPC
import Foundation
import Testing

/// `debounce` with real processes: a burst of `baton run` makes one run whose outcome each of
/// them gets, `status` says when it starts, and a crash while it is pending starts it once.
@Suite("End to end: debounce", .serialized, .offPool)
struct DebounceEndToEndTests {
    /// `ci` appends its run id to the log and fails with exit 3, an outcome no caller could guess.
    static func config(log: String, window: String) -> String {
        """
        {
          socketMode: "0666",
          actions: {
            ci: { exec: ["sh", "-c", "echo run $BATON_RUN_ID >> \\"$LOG\\"; exit 3"], env: { LOG: "\(log)" },
                  debounce: "\(window)", policy: "queue" },
          },
        }
        """
    }

    static func log(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    static func temporaryLog() -> String { NSTemporaryDirectory() + "baton-debounce-" + UUID().uuidString + ".log" }

    @Test("three baton run in a burst make one run, and each of the three ends with its outcome; status says it is debouncing")
    func burst() async throws {
        let log = Self.temporaryLog()
        defer { try? FileManager.default.removeItem(atPath: log) }
        // The three callers must all connect inside one window: 5 s leaves room on a loaded machine.
        let daemon = try Daemon(config: Self.config(log: log, window: "5s"))
        defer { daemon.stop() }
        let socket = daemon.socket
        let callers = (0..<3).map { _ in Launched(Binaries.baton, ["--socket", socket, "run", "ci", "--json"]) }
        // A bounded poll, off the pool: the pending run shows in status once the first trigger is
        // queued (the callers run on threads of their own, started above).
        let status = try await onThread {
            var status = ""
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline, !status.contains("debouncing, starts in") {
                status = try daemon.baton("status").stdout
            }
            return status
        }
        #expect(status.contains("debouncing, starts in") && status.contains("(run 1)"), "\(status)")
        var outputs: [Output] = []
        for caller in callers { outputs.append(try await caller.output()) }
        for output in outputs {
            #expect(output.code == 1, "each caller exits as run 1 failed: \(output.stdout) \(output.stderr)")
            #expect(output.stdout.contains(#""id" : 1,"#) && output.stdout.contains(#""phase" : "failure""#)
                    && output.stdout.contains(#""exitCode" : 3"#), "\(output.stdout)")
        }
        #expect(outputs.filter { $0.stdout.contains(#""decision" : "created""#) }.count == 1)
        #expect(outputs.filter { $0.stdout.contains(#""decision" : "joined""#) }.count == 2)
        #expect(Self.log(log) == ["run 1"], "one run for the burst")
        let show = try daemon.baton("show", "1").stdout
        #expect(show.contains("other triggers: 2 debounced") && show.components(separatedBy: "  debounced (joined this pending run and pushed its start back)  by ").count - 1 == 2,
                "both joins recorded against run 1: \(show)")
        #expect(show.contains("debounce until "), "\(show)")
    }

    @Test("baton cancel of a pending run answers every baton run of its burst with the cancel, and nothing runs")
    func cancel() async throws {
        let log = Self.temporaryLog()
        defer { try? FileManager.default.removeItem(atPath: log) }
        // The cancel must land inside the window however slowly the callers start: 10 minutes.
        let daemon = try Daemon(config: Self.config(log: log, window: "10m"))
        defer { daemon.stop() }
        let socket = daemon.socket
        let callers = (0..<3).map { _ in Launched(Binaries.baton, ["--socket", socket, "run", "ci"]) }
        // A bounded poll: every trigger of the burst has joined run 1 before the cancel.
        let show = try await onThread {
            Eventually.value("every trigger of the burst joined run 1", within: 120, { (try? daemon.baton("show", "1").stdout) ?? "" }) {
                $0.contains("other triggers: 2 debounced")
            }
        }
        #expect(show.contains("other triggers: 2 debounced"), "\(show)")
        let cancelled = try daemon.baton("cancel", "ci")
        #expect(cancelled.code == 0, "\(cancelled.stdout) \(cancelled.stderr)")
        for caller in callers {
            let output = try await caller.output()
            #expect(output.code == 3 && output.stdout.contains("run 1"), "each caller hears run 1 cancelled: \(output.stdout) \(output.stderr)")
        }
        #expect(Self.log(log).isEmpty, "nothing ran")
        #expect(try daemon.baton("status").stdout.contains("cancelled"), "the last outcome is the cancel")
    }

    @Test("a crash while a run is pending: the restart recovers it, waits out a window, and starts it once")
    func restart() throws {
        let log = Self.temporaryLog()
        defer { try? FileManager.default.removeItem(atPath: log) }
        let config = Self.config(log: log, window: "2s")
        let daemon = try Daemon(config: config)
        let pending = try Client(path: daemon.socket).call(Request(op: .trigger, action: "ci", detach: true))
        #expect(pending.run?.id == 1 && pending.run?.phase == .queued && pending.run?.debounceUntil != nil,
                "\(String(describing: pending.run))")
        daemon.crash()
        #expect(Self.log(log).isEmpty, "the crash came inside the window")

        let restarted = try Daemon(config: config, reusing: daemon)
        defer { restarted.stop() }
        let ended = try Client(path: restarted.socket).call(Request(op: .wait, run: 1)).run
        #expect(ended?.phase == .failure && ended?.exitCode == 3 && ended?.attempts == 1, "\(String(describing: ended))")
        #expect(Self.log(log) == ["run 1"], "started once")
        let show = try restarted.baton("show", "1").stdout
        #expect(show.contains("recovered") && show.components(separatedBy: "debounce until ").count - 1 == 2, "\(show)")
        let history = try restarted.baton("history", "--json").stdout
        #expect(history.components(separatedBy: #""action" : "ci""#).count == 2, "one run of ci: \(history)")
    }
}
