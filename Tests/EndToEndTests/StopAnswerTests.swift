import BatonClient
import BatonCore
import Foundation
import Testing

/// Issue 41, part 1's loose end: a plain stop (SIGTERM, as `systemctl stop` or `restart` sends)
/// ends each connection as a restart in place does (`{"restarting":true}`, once the runs are
/// drained), and the clients waiting on a run wait for the next batond on the same socket.
@Suite("End to end: a stop that answers, and clients that wait for the next batond", .serialized, .offPool)
struct StopAnswerTests {
    @Test("baton run, baton wait, baton logs -f and BatonClient.wait ride out a SIGTERM and a new start on the same socket: each sees the run's true end")
    func clientsRideOutAStop() async throws {
        let scratch = NSTemporaryDirectory() + "baton-stopanswer-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let go = scratch + "/go"
        let config = """
            { requireUser: false, actions: { nap: { exec: ["sh", "-c", "echo hi; while [ ! -e \\"$GO\\" ]; do sleep 0.02; done; echo bye; exit 4"], env: { GO: "\(go)" } } } }
            """
        let daemon = try Daemon(config: config)
        let running = Launched(Binaries.baton, ["--socket", daemon.socket, "run", "nap"])
        try daemon.waitForLog("run 1 nap: queued → loading")
        let waiting = Launched(Binaries.baton, ["--socket", daemon.socket, "wait", "1"])
        // `logs -f` through a pipe that marks its first line: it is attached once that is there.
        let logged1 = scratch + "/logging"
        let logging = Launched("/bin/bash", ["-c", #"set -o pipefail; "$0" --socket "$1" logs -f 1 | { IFS= read -r line && printf '%s\n' "$line" && : > "$2"; cat; }"#,
                                             Binaries.baton, daemon.socket, logged1])
        // A waiter known to be attached before the stop (its first update is the run as it is
        // then): without the stop's last line it would be told "batond stopped" and fail.
        let (attached, told) = AsyncStream<Void>.makeStream()
        let socket = daemon.socket
        // The stream ends with the wait, so a wait that fails before its first update ends it too.
        // Off the pool: the wait's connection is counted below against `Eventually`'s bound, which
        // a `Task {}` queued on the cooperative pool behind a run's synchronous tests could outlast.
        let library = Task(executorPreference: OffPoolThreads.shared) {
            defer { told.finish() }
            return try await BatonClient.wait(run: 1, socket: socket) { _ in told.yield() }
        }
        var updated = false
        for await _ in attached { updated = true; break }
        guard updated else {
            let ended = await library.result
            Issue.record("the library's wait ended before its first update: \(ended)")
            return
        }
        // Each client attached before the stop (else one that comes after it may be refused
        // `shutting_down`, which is not what this tests): `logs -f` has its first line; then
        // batond holds the five connections of run, wait, logs -f, the library's wait and the query.
        guard Eventually.until("baton logs -f 1 printed its first line", { FileManager.default.fileExists(atPath: logged1) }) else { return }
        guard try Eventually.until("five connections (run, wait, logs -f, the library's wait, metrics)", { try Self.connections(daemon) >= 5 }) else { return }
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
        #expect(daemon.stderr.contains("stopping drain: connections drained"), "\(daemon.stderr.suffix(2_000))")
        // The run ends while no batond serves: its shim keeps the status for the next one.
        FileManager.default.createFile(atPath: go, contents: nil)
        let next = try Daemon(config: config, reusing: daemon)
        let ended = try await library.value
        #expect(ended.phase == .failure && ended.exitCode == 4, "\(ended)")
        let (ran, waited, logged) = (try await running.output(), try await waiting.output(), try await logging.output())
        let fresh = try next.baton("wait", "1")
        #expect(fresh.stdout.contains("run 1") && fresh.code != 0, "\(fresh)")
        #expect(ran.code == fresh.code && ran.stdout == fresh.stdout, "baton run: \(ran)")
        #expect(waited.code == fresh.code && waited.stdout == fresh.stdout, "baton wait: \(waited)")
        #expect(logged.stdout == "hi\nbye\n" && logged.code == fresh.code, "baton logs -f: \(logged)")
        next.stop()
    }

    /// `baton_connections`, as `baton metrics` says it.
    static func connections(_ daemon: Daemon) throws -> Int {
        let text = try daemon.baton("metrics").stdout
        let line = text.split(separator: "\n").first { $0.hasPrefix("baton_connections ") }
        return line.flatMap { Int(Double($0.split(separator: " ").last ?? "") ?? -1) } ?? -1
    }
}
