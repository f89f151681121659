import BatonCore
import BatonIPC
import BatonStore
import Foundation
import Testing

/// Issue 21, item 3: two different param sets made the same single-flight key
/// (`kp a=x b=y b=z`), so a `join` told the second caller that a run of other params was its own.
@Suite("End to end: single-flight keys", .serialized, .offPool)
struct KeyTests {
    /// A directory with one FIFO per run id: run N of `kp` logs its params, then waits on `N`.
    final class RunGates {
        let directory: String

        init(runs: ClosedRange<Int>) throws {
            directory = NSTemporaryDirectory() + "baton-keys-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            for id in runs where mkfifo(directory + "/\(id)", 0o600) != 0 { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        }

        /// Lets run `id` end; returns once its process has logged its params and opened its FIFO.
        func release(_ id: Int64) {
            let fd = open(directory + "/\(id)", O_WRONLY)
            guard fd >= 0 else { return }
            close(fd)
        }

        /// The lines the runs logged: `id|a|b`.
        var log: [String] {
            ((try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        deinit { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// `kp`, with key params `a` and `b` and policy join, run N logging and waiting on `gates`.
    static func action(_ gates: RunGates) -> String {
        #"""
        kp: { exec: ["sh", "-c", "printf '%s|%s|%s\\n' \"$BATON_RUN_ID\" \"$BATON_PARAM_A\" \"$BATON_PARAM_B\" >> \"$DIR/log\"; cat \"$DIR/$BATON_RUN_ID\" > /dev/null"],
              env: { DIR: "\#(gates.directory)" }, policy: "join", params: { a: {}, b: {} }, keyParams: ["a", "b"] },
        """#
    }

    static func config(_ gates: RunGates) -> String {
        #"{ shutdownGrace: "0s", actions: { \#(action(gates)) } }"#
    }

    @Test("join: `a=\"x b=y\" b=z` and `a=x b=\"y b=z\"` are two keys, two runs, each with its own params")
    func joinKeepsParamsApart() throws {
        let gates = try RunGates(runs: 1...2)
        let daemon = try Daemon(config: Self.config(gates))
        let first = try daemon.baton("run", "kp", "-p", "a=x b=y", "-p", "b=z", "--detach")
        #expect(first.stdout == "1\n", "\(first.stderr)")
        let second = try daemon.baton("run", "kp", "-p", "a=x", "-p", "b=y b=z", "--detach")
        // Before the fix: "1", joined to the run of the other params.
        try #require(second.stdout == "2\n", "the second trigger joined run \(second.stdout)")

        gates.release(1)
        gates.release(2)
        for id in [1, 2] { #expect(try daemon.baton("wait", "\(id)").code == 0) }
        #expect(Set(gates.log) == ["1|x b=y|z", "2|x|y b=z"])
        let keys = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT id, key FROM runs ORDER BY id"])
        #expect(keys.stdout == "1|kp a=x%20b%3Dy b=z\n2|kp a=x b=y%20b%3Dz\n")
        let show = try daemon.baton("show", "2")
        #expect(show.stdout.contains("(key kp a=x b=y%20b%3Dz)"), "\(show.stdout)")
        let joined = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT count(*) FROM triggers"])
        #expect(joined.stdout == "0\n", "nobody joined a run of other params")
    }

    @Test("cancel --key stops the run of that key only, not one whose params print alike")
    func cancelByKey() throws {
        let gates = try RunGates(runs: 1...2)
        let daemon = try Daemon(config: Self.config(gates))
        _ = try daemon.baton("run", "kp", "-p", "a=x b=y", "-p", "b=z", "--detach")
        try #require(try daemon.baton("run", "kp", "-p", "a=x", "-p", "b=y b=z", "--detach").stdout == "2\n")
        let cancel = try daemon.baton("cancel", "kp", "--key", "kp a=x b=y%20b%3Dz")
        #expect(cancel.code == 0, "\(cancel.stderr)")
        #expect(try daemon.baton("wait", "2").code != 0)
        let status = try daemon.baton("status")
        #expect(status.stdout.contains("(run 1, a=x%20b%3Dy b=z)"), "\(status.stdout)")
        gates.release(1)
        #expect(try daemon.baton("wait", "1").code == 0)
    }

    @Test("a run queued under its old key before the upgrade is joined, after it, by a trigger of its own params only")
    func upgradeKeepsQueuedRuns() throws {
        let gates = try RunGates(runs: 1...2)
        let path = gates.directory + "/history.sqlite"
        do {
            // As version 1 left it: run 1 queued under the key both param sets made.
            let connection = try Connection(path: path)
            try Migrator.migrate(connection, migrations: Array(Migrator.migrations.prefix(1)))
            let now = DatabaseValue.integer(Timestamp.now.rawValue)
            try connection.withStatement("""
                INSERT INTO runs (id, action, key, phase, policy, params, queued_at) VALUES (1, 'kp', 'kp a=x b=y b=z', 'queued', 'join', ?, ?)
                """) { try $0.run([.text(JSONText.object(["a": "x", "b": "y b=z"])), now]) }
            try connection.withStatement("INSERT INTO transitions (run_id, seq, to_phase, at) VALUES (1, 1, 'queued', ?)") { try $0.run([now]) }
        }
        let daemon = try Daemon(config: Self.config(gates), database: path)
        let same = try daemon.baton("run", "kp", "-p", "a=x", "-p", "b=y b=z", "--detach")
        #expect(same.stdout == "1\n", "\(same.stderr)")
        let other = try daemon.baton("run", "kp", "-p", "a=x b=y", "-p", "b=z", "--detach")
        try #require(other.stdout == "2\n", "the other params joined run \(other.stdout)")
        gates.release(1)
        gates.release(2)
        for id in [1, 2] { #expect(try daemon.baton("wait", "\(id)").code == 0) }
        #expect(Set(gates.log) == ["1|x|y b=z", "2|x b=y|z"])
    }
}
