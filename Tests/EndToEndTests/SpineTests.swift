import BatonCore
import BatonIPC
import BatonStore
import Foundation
import Testing

@Suite("End to end: batond, baton and the socket", .offPool)
struct SpineTests {
    static let config = """
        {
          actions: {
            ok: { exec: ["sh", "-c", "echo all good"], policy: "reject" },
            broken: { exec: ["sh", "-c", "echo 'no space left' >&2; exit 3"], policy: "reject" },
            slow: { exec: ["sleep", "30"], policy: "reject" },
          },
        }
        """

    @Test("baton run of a succeeding and a failing action; history, show and the file agree")
    func runAndHistory() throws {
        let daemon = try Daemon(config: Self.config)
        let ok = try daemon.baton("run", "ok")
        #expect(ok.code == 0, "\(ok.stderr)")
        #expect(ok.stdout.contains("ok run 1 succeeded"))
        // --socket after the command, as systemctl and kubectl users write it.
        let broken = try execute(Binaries.baton, ["run", "broken", "--socket", daemon.socket])
        #expect(broken.code == 1)
        #expect(broken.stdout.contains("exited with status 3: no space left"))

        let history = try daemon.baton("history", "--json")
        let runs = try JSONSerialization.jsonObject(with: Data(history.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(runs.map { $0["action"] as? String } == ["broken", "ok"])
        #expect(runs.first?["error"] as? String == "exited with status 3: no space left")

        let show = try daemon.baton("show", "2")
        #expect(show.code == 0)
        #expect(show.stdout.contains("queued → loading"))
        #expect(show.stdout.contains("loading → failure"))
        #expect(show.stdout.contains("no space left"))

        let rows = try execute("/usr/bin/sqlite3", [daemon.database,
            "SELECT run_id, seq, coalesce(from_phase, '-'), to_phase FROM transitions ORDER BY run_id, seq"])
        #expect(rows.stdout == """
            1|1|-|queued
            1|2|queued|loading
            1|3|loading|success
            2|1|-|queued
            2|2|queued|loading
            2|3|loading|failure

            """)
        let phases = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT id, phase, exit_code FROM runs ORDER BY id"])
        #expect(phases.stdout == "1|success|0\n2|failure|3\n")
    }

    @Test("a busy action is rejected with exit code 75, and unknown actions with 2")
    func busyAndUnknown() throws {
        let daemon = try Daemon(config: Self.config)
        let detached = try daemon.baton("run", "slow", "--detach")
        #expect(detached.code == 0)
        #expect(detached.stdout == "1\n")
        let busy = try daemon.baton("run", "slow")
        #expect(busy.code == 75)
        #expect(busy.stderr.contains("Error: slow is busy: run 1"))
        let unknown = try daemon.baton("run", "nope")
        #expect(unknown.code == 2)
        #expect(unknown.stderr.contains("unknown action \"nope\""))
        let cancel = try daemon.baton("cancel", "slow")
        #expect(cancel.code == 0)
        let wait = try daemon.baton("wait", "1")
        #expect(wait.code == 3)
    }

    @Test("a garbage line gets bad_request, later requests on that connection work, and other clients are served")
    func garbage() throws {
        let daemon = try Daemon(config: Self.config)
        let bad = try Client(path: daemon.socket)
        let good = try Client(path: daemon.socket)
        try bad.sendRaw(Data("this is not json\n".utf8))
        let answer = try #require(try bad.receive())
        #expect(answer.ok == false)
        #expect(answer.error?.code == .badRequest)
        try bad.sendRaw(Data((String(repeating: "x", count: 1_100_000) + "\n").utf8))
        #expect(try bad.receive()?.error?.code == .badRequest)
        try bad.sendRaw(Data(#"{"id": 7, "op": "fly"}"#.utf8 + [10]))
        let unknownOp = try #require(try bad.receive())
        #expect(unknownOp.error?.code == .badRequest)
        #expect(unknownOp.id == .number(7))
        let pong = try good.call(Request(op: .ping))
        #expect(pong.ok == true)
        let again = try bad.call(Request(op: .ping))
        #expect(again.ok == true)
        let run = try good.call(Request(op: .trigger, action: "ok"))
        #expect(run.run?.phase == .success)
        #expect(run.run?.trigger?.pid == getpid())
    }

    @Test("history and show work from the file when batond is down")
    func offline() throws {
        let daemon = try Daemon(config: Self.config)
        _ = try daemon.baton("run", "ok")
        daemon.stop()
        let history = try execute(Binaries.baton, ["--socket", daemon.socket, "--database", daemon.database, "history"])
        #expect(history.code == 0)
        #expect(history.stdout.contains("success"))
        let down = try daemon.baton("status")
        #expect(down.code == 69)
        #expect(down.stderr.contains("Try:"))
    }
}

@Suite("End to end: files and startup", .offPool)
struct StartupTests {
    @Test("a path that is not a socket is never removed, and batond exits 1 saying so")
    func notASocket() throws {
        let directory = NSTemporaryDirectory() + "baton-sock-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/baton.sock"
        try "precious".write(toFile: path, atomically: true, encoding: .utf8)
        try #"{ actions: { a: { exec: ["true"] } } }"#.write(toFile: directory + "/c.json5", atomically: true, encoding: .utf8)
        let result = try execute(Binaries.batond, ["--config", directory + "/c.json5", "--socket", path, "--database", directory + "/h.sqlite"])
        #expect(result.code == 1)
        #expect(result.stderr.contains("is not a socket; refusing to remove it"))
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "precious")
    }

    @Test("the socket gets mode 0660, and a stale socket is replaced")
    func socketMode() throws {
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"] } } }"#)
        let attributes = try FileManager.default.attributesOfItem(atPath: daemon.socket)
        #expect((attributes[.posixPermissions] as? Int) == 0o660)
        daemon.process.interrupt()
        _ = daemon.waitForExit()
        // A socket file left behind (as after SIGKILL) is replaced by the next start.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(stale) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            daemon.socket.utf8CString.withUnsafeBytes { buffer.copyMemory(from: $0) }
        }
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        let second = try Daemon(config: #"{ actions: { a: { exec: ["true"] } } }"#, reusing: daemon)
        #expect(try second.baton("run", "a").code == 0)
    }

    @Test("batond copied alone into an empty folder creates and migrates a new database")
    func copiedAlone() throws {
        let directory = NSTemporaryDirectory() + "baton-alone-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try installExecutable(copying: Binaries.batond, at: directory + "/batond")
        let result = try execute(directory + "/batond", ["--check-config", "/dev/null"])
        #expect(result.code == 1)
        let config = directory + "/c.json5"
        try #"{ actions: { a: { exec: ["true"] } } }"#.write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try Daemon(binary: directory + "/batond", configPath: config, directory: directory)
        #expect(try daemon.baton("run", "a").code == 0)
        let tables = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT max(version) FROM schema_migrations"])
        #expect(tables.stdout == "\(Migrator.latestVersion)\n")
    }
}
