import BatonCore
import BatonIPC
import Foundation
import Testing

/// The history file taken away or made unwritable under batond (issue 12, items 2, 3 and 11).
@Suite("End to end: the history file deleted, read-only, or on a full disk at start", .serialized, .offPool)
struct StoreFaultTests {
    @Test("a history deleted while batond runs: noticed and logged, triggers refused naming the file, ids never reused after a restart")
    func deleted() throws {
        let config = #"{ actions: { a: { exec: ["true"] } } }"#
        let daemon = try Daemon(config: config)
        for id in 1...3 { #expect(try daemon.baton("run", "a").stdout.contains("a run \(id) succeeded")) }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: daemon.database + suffix) }
        let refused = try daemon.baton("run", "a")
        #expect(refused.code == 75)
        #expect(refused.stderr.contains("\(daemon.database) was deleted while batond ran"), "\(refused.stderr)")
        try daemon.waitForLog("the history cannot be written: the history file \(daemon.database) was deleted")
        let status = try Client(path: daemon.socket).call(Request(op: .status))
        #expect(status.storeProblem?.contains("deleted") == true)
        #expect(try daemon.baton("status").stdout.contains("the history cannot be written"))
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)

        // The next start finds a new file that remembers the ids given out.
        let restarted = try Daemon(config: config, reusing: daemon, name: "restarted")
        #expect(try restarted.baton("run", "a").stdout.contains("a run 4 succeeded"))
    }

    @Test("a history deleted while a run loads: one SIGTERM stops batond within the grace, logging the run's end it could not write")
    func deletedWhileLoading() throws {
        let gate = try FifoGate()
        let config = #"{ shutdownGrace: "2s", actions: { gated: { exec: ["cat", "\#(gate.path)"], survivesRestart: false } } }"#
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "gated", "--detach").stdout == "1\n")
        try daemon.waitForLog("run 1 gated: queued → loading")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: daemon.database + suffix) }
        gate.release()
        // The run's end is the first write after the deletion: the writer notices it there.
        try daemon.waitForLog("the history cannot be written: the history file \(daemon.database) was deleted")
        daemon.signal(SIGTERM)
        // The grace (2 s) is the bound's part that counts; before the fix only a second signal ended batond.
        let status = daemon.waitForExit(within: 20)
        #expect(status != nil, "one SIGTERM did not stop batond; its log ends: \(daemon.stderr.suffix(1_500))")
        if status == nil { daemon.crash() }
        #expect(daemon.stderr.contains("not written before exit: run 1 loading → success"), "\(daemon.stderr.suffix(1_500))")
        #expect(daemon.stderr.contains("was deleted while batond ran, so this line is its only record"), "\(daemon.stderr.suffix(1_500))")
    }

    @Test("an immutable history file (or -wal) at start: batond refuses to start, naming the file and why, without SQL")
    func readOnly() throws {
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"] } } }"#)
        daemon.stop()
        for file in [daemon.database, daemon.database + "-wal"] {
            _ = FileManager.default.createFile(atPath: file, contents: FileManager.default.contents(atPath: file) ?? Data())
            #expect(try execute("/usr/bin/chattr", ["+i", file]).code == 0)
            defer { _ = try? execute("/usr/bin/chattr", ["-i", file]) }
            let result = try execute(Binaries.batond, ["--config", daemon.configPath, "--socket", daemon.socket, "--database", daemon.database])
            #expect(result.code == 1)
            #expect(result.stderr.contains("the history database \(daemon.database) cannot be written"), "\(result.stderr)")
            #expect(result.stderr.contains(file))
            #expect(!result.stderr.contains("INSERT") && !result.stderr.contains("SQLite error"), "\(result.stderr)")
        }
    }

    @Test("a full disk at start with recovery pending: batond still serves, logs why, shows it in status, and refuses triggers (exit 75)")
    func fullAtStart() throws {
        let mount = try SmallDisk.mount("baton-full-start")
        defer { SmallDisk.unmount(mount) }
        // Not under a shim: a shim whose pid the history holds by the crash is adopted, and
        // adopting writes nothing, so whether recovery had a write to fail raced the crash (CI
        // run ci30a: "1 adopted", no error). Without one, recovery must write the run's end.
        let config = #"{ actions: { long: { exec: ["sleep", "300"], survivesRestart: false }, a: { exec: ["true"] } } }"#
        let first = try Daemon(config: config, database: mount + "/history.sqlite")
        #expect(try first.baton("run", "long", "--detach").stdout == "1\n")
        try first.waitForLog("run 1 long: queued → loading")
        first.crash()
        _ = try execute("/usr/bin/dd", ["if=/dev/zero", "of=\(mount)/filler", "bs=4096"])

        let second = try Daemon(config: config, reusing: first, name: "second")
        try second.waitForLog("the history cannot be written")
        let status = try second.baton("status")
        #expect(status.code == 0)
        #expect(status.stdout.contains("the history cannot be written"), "\(status.stdout)")
        let refused = try second.baton("run", "a")
        #expect(refused.code == 75, "\(refused.stderr)")
        try FileManager.default.removeItem(atPath: mount + "/filler")
        try second.waitForLog("the history can be written again")
        let run = try execute("/usr/bin/sqlite3", [mount + "/history.sqlite", "SELECT phase, reason FROM runs WHERE id = 1"])
        #expect(run.stdout == "failure|interrupted\n")
        #expect(try second.baton("run", "a").code == 0)
    }

    @Test("SIGTERM with the disk full: after the grace and a second signal batond exits, logging what it could not write; the next start recovers the run")
    func fullAtStop() throws {
        let mount = try SmallDisk.mount("baton-full-stop")
        defer { SmallDisk.unmount(mount) }
        let config = #"{ shutdownGrace: "200ms", actions: { long: { exec: ["sleep", "300"], killGrace: "200ms", survivesRestart: false }, a: { exec: ["true"] } } }"#
        let daemon = try Daemon(config: config, database: mount + "/history.sqlite")
        #expect(try daemon.baton("run", "long", "--detach").stdout == "1\n")
        try daemon.waitForLog("run 1 long: queued → loading")
        _ = try execute("/usr/bin/dd", ["if=/dev/zero", "of=\(mount)/filler", "bs=4096"])

        daemon.signal(SIGTERM)
        // The first signal is taken before the second is sent (two sent at once may be one).
        try daemon.waitForLog("stopping:")
        // The grace ends, the run is stopped, and its end cannot be written: the gate for the second signal.
        try daemon.waitForLog("the history cannot be written")
        daemon.signal(SIGTERM)
        try daemon.waitForLog("second stop signal")
        // A generous bound: before the fix batond waited for as long as the disk stayed full.
        let status = daemon.waitForExit(within: 60)
        #expect(status != nil, "batond did not exit with the disk full; its log ends: \(daemon.stderr.suffix(1_500))")
        if status == nil { daemon.crash() }
        #expect(daemon.stderr.contains("not written before exit: run 1 loading → cancelled (shutdown"), "\(daemon.stderr.suffix(1_500))")

        try FileManager.default.removeItem(atPath: mount + "/filler")
        let restarted = try Daemon(config: config, reusing: daemon, name: "restarted")
        try restarted.waitForLog("recovered after an unclean stop: 1 interrupted")
        let run = try execute("/usr/bin/sqlite3", [mount + "/history.sqlite", "SELECT phase, reason FROM runs WHERE id = 1"])
        #expect(run.stdout == "failure|interrupted\n")
        #expect(try restarted.baton("run", "a").code == 0)
    }

    @Test("one SIGTERM with the disk full: batond stops waiting for the end it cannot write 10 s after the grace, exits, and logs it")
    func fullAtStopOneSignal() throws {
        let mount = try SmallDisk.mount("baton-full-one")
        defer { SmallDisk.unmount(mount) }
        let config = #"{ shutdownGrace: "200ms", actions: { long: { exec: ["sleep", "300"], killGrace: "200ms", survivesRestart: false } } }"#
        let daemon = try Daemon(config: config, database: mount + "/history.sqlite")
        #expect(try daemon.baton("run", "long", "--detach").stdout == "1\n")
        try daemon.waitForLog("run 1 long: queued → loading")
        _ = try execute("/usr/bin/dd", ["if=/dev/zero", "of=\(mount)/filler", "bs=4096"])

        daemon.signal(SIGTERM)
        // The grace, the kill grace, the 10 s write timeout and the store's 2 s close: before, it never exited.
        let status = daemon.waitForExit(within: 40)
        #expect(status != nil, "one SIGTERM did not stop batond with the disk full; its log ends: \(daemon.stderr.suffix(1_500))")
        if status == nil { daemon.crash() }
        #expect(!daemon.stderr.contains("second stop signal"))
        #expect(daemon.stderr.contains("not written before exit: run 1 loading → cancelled (shutdown"), "\(daemon.stderr.suffix(1_500))")
    }
}
