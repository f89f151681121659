import BatonCore
import BatonIPC
@testable import BatonStore
import Foundation
import Testing

/// Issue 42, item 2: batond with `search: "index"` opening a history without the index builds it,
/// telling systemd to wait (it may outlast the start timeout) and saying so in its log; with the
/// default (`"scan"`) it drops it again, says so, and still finds the output.
@Suite("End to end: a history from before search", .offPool)
struct SearchMigrationTests {
    @Test("search: index on a version-9 history: EXTEND_TIMEOUT_USEC and STATUS, a line in the log, its old output found; scan drops it")
    func oldHistory() throws {
        let directory = NSTemporaryDirectory() + "baton-search-migration-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = directory + "/history.sqlite"
        let old = try Connection(path: database)
        #expect(try Migrator.migrate(old, migrations: Migrator.migrations.filter { $0.version <= 9 }).last == 9)
        // Timed now: retention, which runs as batond starts, would remove a run ended in 1970.
        let now = Timestamp.now.rawValue
        try old.execute("""
            INSERT INTO runs (id, action, key, phase, policy, params, queued_at, started_at, ended_at)
                VALUES (1, 'hello', 'hello', 'failure', 'reject', '{}', \(now), \(now), \(now + 1));
            INSERT INTO output_chunks (run_id, start, stream, at, bytes) VALUES (1, 0, 1, 1, CAST('ok\nERROR: no space left on device\n' AS BLOB));
            INSERT INTO output_totals (run_id, total, dropped, head) VALUES (1, 35, 0, 1000);
            """)
        let config = directory + "/baton.json5"
        try #"{ requireUser: false, search: "index", actions: { hello: { exec: ["true"] } } }"#.write(toFile: config, atomically: true, encoding: .utf8)
        let notify = try DatagramSink(directory + "/notify")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.batond)
        process.arguments = ["--config", config, "--socket", directory + "/baton.sock", "--database", database]
        process.environment = ProcessInfo.processInfo.environment.merging(["NOTIFY_SOCKET": notify.path]) { $1 }
        let stderr = Pipe()
        process.standardError = stderr
        try process.run()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        let migrating = try #require(notify.until("STATUS=building the search index"))
        #expect(migrating.contains("EXTEND_TIMEOUT_USEC="), "\(migrating)")
        #expect(notify.until("READY=1") != nil)
        let found = try execute(Binaries.baton, ["--socket", directory + "/baton.sock", "search", "no space left"])
        #expect(found.code == 0 && found.stdout.contains("  2: ERROR: no space left on device\n"), "\(found)")
        process.terminate()
        process.waitUntilExit()
        let log = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(log.contains("migrating the history to version 10 (output_search)"), "\(log)")
        #expect(log.contains("building the search index over 1 chunks (0.0 MiB) of kept output"), "\(log)")
        #expect(try SearchIndex.isPresent(Connection(path: database)))
        // The default again: batond drops the index, says so, and scans.
        try #"{ requireUser: false, actions: { hello: { exec: ["true"] } } }"#.write(toFile: config, atomically: true, encoding: .utf8)
        let scanning = Process()
        scanning.executableURL = process.executableURL
        scanning.arguments = process.arguments
        let ready = try DatagramSink(directory + "/notify-2")
        scanning.environment = ProcessInfo.processInfo.environment.merging(["NOTIFY_SOCKET": ready.path]) { $1 }
        let scanLog = Pipe()
        scanning.standardError = scanLog
        try scanning.run()
        defer { if scanning.isRunning { scanning.terminate(); scanning.waitUntilExit() } }
        #expect(ready.until("READY=1") != nil)
        let again = try execute(Binaries.baton, ["--socket", directory + "/baton.sock", "search", "no space left"])
        #expect(again.code == 0 && again.stdout.contains("  2: ERROR: no space left on device\n"), "\(again)")
        scanning.terminate()
        scanning.waitUntilExit()
        #expect(try !SearchIndex.isPresent(Connection(path: database)))
        let dropped = String(decoding: scanLog.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(dropped.contains("dropping the search index"), "\(dropped)")
    }
}
