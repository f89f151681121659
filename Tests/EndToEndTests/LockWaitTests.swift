import BatonCore
import BatonIPC
import Foundation
import Testing

/// Time spent waiting for the SQLite lock is not run time (issue 21, item 14).
@Suite("End to end: waiting for the history's lock does not count as run time", .serialized, .offPool)
struct LockWaitTests {
    /// Another process holding `BEGIN EXCLUSIVE` on the history until `release`.
    final class HeldLock {
        let process = Process()
        let input = Pipe(), output = Pipe()

        /// Returns once the lock is held: sqlite3 has answered a query inside the transaction.
        init(_ database: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
            process.arguments = [database]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            input.fileHandleForWriting.write(Data("PRAGMA busy_timeout = 10000;\nBEGIN EXCLUSIVE;\nSELECT 'held';\n".utf8))
            var seen = Data()
            while !String(decoding: seen, as: UTF8.self).contains("held") {
                let chunk = output.fileHandleForReading.availableData
                try #require(!chunk.isEmpty, "sqlite3 ended before it held the lock")
                seen += chunk
            }
        }

        func release() {
            input.fileHandleForWriting.write(Data("COMMIT;\n.quit\n".utf8))
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    /// Triggers `action` while another process holds the lock for `hold` after batond has the
    /// trigger in flight; returns the run's recorded duration and how long the lock was held
    /// after the trigger, both in seconds.
    func timedUnderLock(_ daemon: Daemon, _ action: String, hold: Double) async throws -> (duration: Double, waited: Double) {
        let lock = try HeldLock(daemon.database)
        let socket = daemon.socket
        let triggered = Launched(Binaries.baton, ["--socket", socket, "run", action])
        // The gate: batond has decided the trigger (the run is in flight) while its write waits.
        try await Eventually.untilAwaited("run 1 in flight while its write waits for the lock") {
            try Client(path: socket).call(Request(op: .status)).actions?.contains(where: { $0.inFlight?.contains { $0.id == 1 } == true }) == true
        }
        let since = Date()
        // Not synchronisation: the length of the lock wait is what the test is about.
        try await Task.sleep(for: .seconds(hold))
        let waited = Date().timeIntervalSince(since)
        lock.release()
        _ = try await triggered.output()
        let row = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT ended_at - started_at FROM runs WHERE id = 1"])
        let micros = try #require(Double(row.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(row.stdout) \(row.stderr)")
        return (micros / 1_000_000, waited)
    }

    @Test("an echo whose start waited for the lock is recorded with its own duration, not the wait")
    func echoUnderLock() async throws {
        let daemon = try Daemon(config: #"{ actions: { e: { exec: ["echo", "hi"] } } }"#)
        let (duration, waited) = try await timedUnderLock(daemon, "e", hold: 2)
        #expect(duration < waited / 2, "recorded \(duration) s for an echo; the lock was held \(waited) s after the trigger")
        #expect(try daemon.baton("show", "1").stdout.contains("success"))
    }

    @Test("a 1 s timeout starts when the process does: the run fails after about 1 s of running, not the wait plus 1 s")
    func timeoutUnderLock() async throws {
        let daemon = try Daemon(config: #"{ actions: { t: { exec: ["sleep", "30"], timeout: "1s", killGrace: "200ms" } } }"#)
        let (duration, waited) = try await timedUnderLock(daemon, "t", hold: 3)
        #expect(duration >= 1, "the timeout is 1 s")
        #expect(duration < waited, "recorded \(duration) s; the lock was held \(waited) s after the trigger")
        let shown = try daemon.baton("show", "1").stdout
        #expect(shown.contains("timeout"), "\(shown)")
    }
}
