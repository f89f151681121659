import BatonCore
import BatonStore
import Foundation
import Testing

/// Issue 41, part 2: a run never dies because batond did.
@Suite("End to end: a run outlives batond", .serialized, .offPool)
struct SurviveTests {
    /// Each run writes a line, waits for GO (after the crash), writes more and exits with its own code.
    static func config(_ directory: String) -> String {
        let wait = #"echo before; while [ ! -e \"$GO\" ]; do sleep 0.02; done"#
        let env = #"env: { GO: "\#(directory)/go", CRASHMARK: "\#(directory)" }"#
        return """
            { maxConcurrentRuns: 8, requireUser: false, actions: {
                waiter: { exec: ["sh", "-c", "\(wait); echo after; exit 3"], \(env), policy: "reject" },
                flood: { exec: ["sh", "-c", "\(wait); seq 1 8000; echo done >&2"], \(env) },
                forker: { exec: ["sh", "-c", "setsid sh -c 'sleep 30' & \(wait); echo forked; exit 7"], \(env),
                          killGrace: "200ms" },
                early: { exec: ["sh", "-c", "echo before; while [ ! -e \\"$EARLY\\" ]; do sleep 0.02; done; echo meanwhile; exit 5"],
                         env: { EARLY: "\(directory)/early", CRASHMARK: "\(directory)" } },
                mortal: { exec: ["sh", "-c", "\(wait); exit 0"], \(env), survivesRestart: false },
                frozen: { exec: ["sh", "-c", "grep ^0:: /proc/self/cgroup | cut -d: -f3 > \(directory)/cgroup; \(wait); exit 4"], \(env) },
            } }
            """
    }

    static func column(_ connection: Connection, _ sql: String) throws -> [String] {
        try connection.withStatement(sql) { statement in
            var values: [String] = []
            while try statement.step() { values.append(statement.string(0) ?? statement.int64(0).map(String.init) ?? "nil") }
            return values
        }
    }

    static func output(_ connection: Connection, run: Int) throws -> Data {
        try connection.withStatement("SELECT bytes FROM output_chunks WHERE run_id = \(run) ORDER BY start") { statement in
            var data = Data()
            while try statement.step() { if case let .blob(bytes) = statement.value(0) { data.append(contentsOf: bytes) } }
            return data
        }
    }

    /// What a test prints of an output that differs: all of a short one, the ends of a long one.
    static func sample(_ data: Data) -> String {
        let text = String(decoding: data, as: UTF8.self)
        return text.count <= 200 ? text.debugDescription : "\(text.prefix(80).debugDescription) … \(text.suffix(80).debugDescription)"
    }

    /// FNV-1a, 64 bits: enough to say two outputs differ.
    static func hash(_ data: Data) -> String {
        String(data.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }, radix: 16) + " (\(data.count) bytes)"
    }

    @Test("SIGKILL of batond while runs load: the next one adopts them; each ends with its true exit code and output; the key stays held")
    func crashKeepsRuns() throws {
        let scratch = ScratchDirectory("survive")
        // Its runs wait on files in it until the end: kept to the test's end, not its last mention.
        defer { withExtendedLifetime(scratch) {} }
        let config = Self.config(scratch.path)
        let daemon = try Daemon(config: config)
        for action in ["waiter", "flood", "forker", "mortal", "early"] { #expect(try daemon.baton("run", action, "--detach").code == 0) }
        let connection = try Connection(path: daemon.database, readOnly: true)
        // Their first lines are in the history before the crash.
        try Eventually.until("the first lines of runs 1 to 5 recorded") {
            try Self.column(connection, "SELECT count(DISTINCT run_id) FROM output_chunks").first == "5"
        }
        daemon.crash()
        // Run 5 ends while no batond runs: its shim keeps the status.
        FileManager.default.createFile(atPath: scratch.file("early"), contents: nil)
        let status = daemon.database + "-shims/5-1/status"
        Eventually.until("run 5's shim wrote its status \(status)") { FileManager.default.fileExists(atPath: status) }

        let again = try Daemon(config: config, reusing: daemon)
        // Single flight held across the crash: the adopted run still holds its key.
        let busy = try again.baton("run", "waiter", "--detach")
        #expect(busy.code == 75, "\(busy)")
        FileManager.default.createFile(atPath: scratch.file("go"), contents: nil)
        for run in 1...5 { _ = try again.baton("wait", String(run)) }

        let rows = try Self.column(connection, "SELECT id || ' ' || phase || ' ' || coalesce(exit_code, '-') || ' ' || coalesce(reason, '-') FROM runs ORDER BY id")
        #expect(rows == ["1 failure 3 exit", "2 success 0 exit", "3 failure 7 exit", "4 failure - interrupted", "5 failure 5 exit"], "\(rows)")
        #expect(String(decoding: try Self.output(connection, run: 1), as: UTF8.self) == "before\nafter\n")
        let flood = "before\n" + (1...8000).map { "\($0)\n" }.joined() + "done\n"
        #expect(Self.hash(try Self.output(connection, run: 2)) == Self.hash(Data(flood.utf8)), "the flood's output, every byte")
        #expect(String(decoding: try Self.output(connection, run: 3), as: UTF8.self) == "before\nforked\n")
        #expect(String(decoding: try Self.output(connection, run: 5), as: UTF8.self) == "before\nmeanwhile\n")
        // Never two runs of a key: the refused trigger made none.
        #expect(try Self.column(connection, "SELECT count(*) FROM runs WHERE action = 'waiter'") == ["1"])
        // Nothing of the runs is left: the setsid child was stopped with its run, the mortal one killed at recovery.
        #expect(CrashTests.marked(scratch.path).isEmpty)
        #expect(again.stderr.contains("4 adopted"), "\(again.stderr)")
        again.stop()
    }

    /// The cgroup2 mount point, from /proc/self/mountinfo (never assumed), if one is mounted.
    static func cgroup2Mount() -> String? {
        let lines = ((try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? "").split(separator: "\n")
        return lines.first { $0.contains(" - cgroup2 ") }.map { String($0.split(separator: " ")[4]) }
    }

    @Test("batond killed between a signal's freeze and its thaw: the next one adopts the run and thaws its cgroup, and the run ends")
    func frozenCgroupThawed() throws {
        let scratch = ScratchDirectory("survive")
        // Its runs wait on files in it until the end: kept to the test's end, not its last mention.
        defer { withExtendedLifetime(scratch) {} }
        let config = Self.config(scratch.path)
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "frozen", "--detach").code == 0)
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("the run's first line recorded") { try Self.column(connection, "SELECT count(*) FROM output_chunks").first != "0" }
        let path = try String(contentsOfFile: scratch.file("cgroup"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let mount = Self.cgroup2Mount(), path.contains("/run-1-1") else {
            daemon.stop()
            return // no cgroup per attempt here: the process-group mode freezes nothing
        }
        daemon.crash()
        // What a crash inside `AttemptCgroup.signal` leaves: the attempt frozen.
        let freeze = mount + path + "/cgroup.freeze"
        try Data("1".utf8).write(to: URL(fileURLWithPath: freeze))
        FileManager.default.createFile(atPath: scratch.file("go"), contents: nil)
        let again = try Daemon(config: config, reusing: daemon)
        guard Eventually.until("run 1 ended after the restart", within: 60, {
            (try? Self.column(connection, "SELECT count(*) FROM runs WHERE id = 1 AND ended_at IS NOT NULL").first) == "1"
        }) else { again.stop(); return }
        let row = try Self.column(connection, "SELECT phase || ' ' || coalesce(exit_code, '-') FROM runs WHERE id = 1")
        #expect(row == ["failure 4"], "\(row)")
        again.stop()
    }

    @Test("an adopted shim killed by SIGKILL: the run ends saying how its action ended is not known, and what it left is stopped")
    func shimKilledAfterAdoption() throws {
        let scratch = ScratchDirectory("survive")
        // Its runs wait on files in it until the end: kept to the test's end, not its last mention.
        defer { withExtendedLifetime(scratch) {} }
        let config = Self.config(scratch.path)
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "waiter", "--detach").code == 0)
        let connection = try Connection(path: daemon.database, readOnly: true)
        try Eventually.until("the waiter's first line recorded") { try Self.column(connection, "SELECT count(*) FROM output_chunks").first != "0" }
        daemon.crash()
        let again = try Daemon(config: config, reusing: daemon)
        let shim = try #require(Self.column(connection, "SELECT pgid FROM runs WHERE id = 1").first.flatMap { Int32($0) })
        #expect(kill(shim, SIGKILL) == 0)
        _ = try again.baton("wait", "1")
        let row = try Self.column(connection, "SELECT phase || ': ' || coalesce(error, '-') FROM runs WHERE id = 1")
        #expect(row.first?.hasPrefix("failure: how the action ended is not known") == true, "\(row)")
        #expect(CrashTests.marked(scratch.path).isEmpty, "the action the shim left is stopped")
        again.stop()
    }
}
