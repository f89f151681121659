import BatonCore
import BatonIPC
import BatonStore
import Foundation
import Testing

/// Load that triggers actions from several threads until stopped, keeping every answer it got.
final class TriggerLoad: @unchecked Sendable {
    struct Answer {
        var run: Int64
        var decision: String
    }

    private let lock = NSLock()
    private var answers: [Answer] = []
    private var stopped = false
    private let group = DispatchGroup()
    private static let choices: [(action: String, params: [String: String]?)] = [
        ("reject", nil), ("join", nil), ("queue", nil), ("replace", nil), ("restart", nil), ("long", nil),
        ("keyed", ["n": "1"]), ("keyed", ["n": "2"]),
    ]

    init(socket: String, threads: Int) {
        for index in 0..<threads {
            group.enter()
            Thread.detachNewThread { [self] in
                var generator = SystemRandomNumberGenerator()
                defer { group.leave() }
                guard let client = try? Client(path: socket) else { return }
                var count = 0
                while !lock.withLock({ stopped }) {
                    count += 1
                    let choice = Self.choices[Int.random(in: 0..<Self.choices.count, using: &generator)]
                    // Most triggers detach; some follow their run, as `baton run` does.
                    let detach = (count + index) % 4 != 0
                    guard let response = try? client.call(Request(op: .trigger, action: choice.action, params: choice.params,
                                                                  detach: detach)) else { return }
                    if response.ok == true, let run = response.run?.id {
                        record(Answer(run: run, decision: response.decision?.rawValue ?? "?"))
                    } else if response.error?.code == .busy, let run = response.error?.run {
                        record(Answer(run: run, decision: "busy"))
                    }
                }
            }
        }
    }

    private func record(_ answer: Answer) { lock.withLock { answers.append(answer) } }

    /// Stops the load (the daemon is gone, so every blocked call returns) and returns the answers.
    func finish() -> [Answer] {
        lock.withLock { stopped = true }
        group.wait()
        return lock.withLock { answers }
    }
}

@Suite("End to end: crashes, shutdown, reload and store faults", .serialized, .offPool)
struct CrashTests {
    static func crashConfig(marker: String) -> String {
        let common = #"env: { CRASHMARK: "\#(marker)" }, killGrace: "200ms""#
        return """
            {
              maxConcurrentRuns: 3,
              actions: {
                reject: { exec: ["sh", "-c", "sleep 0.05"], policy: "reject", \(common) },
                join: { exec: ["sh", "-c", "sleep 0.1"], policy: "join", \(common) },
                queue: { exec: ["sh", "-c", "sleep 0.03"], policy: "queue", \(common) },
                replace: { exec: ["sh", "-c", "sleep 0.3 & sleep 0.1; wait"], policy: "replace", \(common) },
                restart: { exec: ["sh", "-c", "sleep 0.15"], policy: "queue", onInterrupt: "restart", \(common) },
                long: { exec: ["sh", "-c", "sleep 30 & wait"], policy: "reject", \(common) },
                keyed: { exec: ["sleep", "0.05"], policy: "join", params: { n: { pattern: "^[0-9]$" } }, keyParams: ["n"], \(common) },
              },
            }
            """
    }

    /// Live processes whose environment carries the marker.
    static func marked(_ marker: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { Int32($0) }.filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")"), !stat[close...].hasPrefix(") Z"),
                  let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            return environ.split(separator: 0).contains { $0.elementsEqual(Array("CRASHMARK=\(marker)".utf8)) }
        }
    }

    @Test("SIGKILL at random moments under load: answered triggers map to runs, every run ends on a legal path, nothing survives")
    func crashes() throws {
        let points = Int(ProcessInfo.processInfo.environment["BATON_CRASH_POINTS"] ?? "") ?? 20
        let marker = UUID().uuidString
        let config = Self.crashConfig(marker: marker)
        let first = try Daemon(config: config)
        var daemons = [first]
        var answers: [TriggerLoad.Answer] = []
        for point in 0..<points {
            let daemon = point == 0 ? first : try Daemon(config: config, reusing: first, name: "restart-\(point)")
            daemons.append(daemon)
            let load = TriggerLoad(socket: daemon.socket, threads: 6)
            // The chaos: a random moment of load, then SIGKILL.
            usleep(UInt32.random(in: 20_000...200_000))
            daemon.crash()
            answers += load.finish()
        }
        // A last start drains what the crashes left.
        let last = try Daemon(config: config, reusing: first, name: "final")
        let connection = try Connection(path: first.database, readOnly: true)
        let unfinished = try connection.withStatement("SELECT id FROM runs WHERE phase IN ('queued', 'loading', 'retrying')") { statement in
            var ids: [Int64] = []
            while try statement.step() { ids.append(statement.int64(0)!) }
            return ids
        }
        // `long` runs for 30 s: cancel it, so that any of its processes still alive at the end
        // can only be one that recovery failed to kill.
        _ = try Client(path: last.socket).call(Request(op: .cancel, action: "long"))
        for id in unfinished {
            _ = try Client(path: last.socket).call(Request(op: .wait, run: id))
        }

        // Every answered trigger names a run that is in the history.
        let ids = Set(try connection.withStatement("SELECT id FROM runs") { statement in
            var ids: [Int64] = []
            while try statement.step() { ids.append(statement.int64(0)!) }
            return ids
        })
        let missing = answers.filter { !ids.contains($0.run) }
        #expect(missing.isEmpty, "answered but not in the history: \(missing.prefix(5))")
        #expect(answers.count > points, "the load got too few answers to mean anything: \(answers.count)")

        // Every run is terminal, and its transitions are a legal path with contiguous numbers.
        var paths: [Int64: [(seq: Int64, from: Phase?, to: Phase)]] = [:]
        try connection.withStatement("SELECT run_id, seq, from_phase, to_phase FROM transitions ORDER BY run_id, seq") { statement in
            while try statement.step() {
                paths[statement.int64(0)!, default: []].append(
                    (statement.int64(1)!, statement.string(2).flatMap(Phase.init(rawValue:)), Phase(rawValue: statement.string(3)!)!))
            }
        }
        let phases = try connection.withStatement("SELECT id, phase FROM runs") { statement in
            var phases: [Int64: Phase] = [:]
            while try statement.step() { phases[statement.int64(0)!] = Phase(rawValue: statement.string(1)!) }
            return phases
        }
        var broken: [String] = []
        for (id, phase) in phases {
            let path = paths[id] ?? []
            if !phase.isTerminal { broken.append("run \(id) ended \(phase)") }
            if path.map(\.seq) != Array(1...Int64(max(path.count, 1))) || path.isEmpty { broken.append("run \(id) seqs \(path.map(\.seq))") }
            var previous: Phase?
            for step in path {
                if step.from != previous || !Phase.allows(from: step.from, to: step.to) {
                    broken.append("run \(id): \(step.from?.rawValue ?? "new") → \(step.to.rawValue) after \(previous?.rawValue ?? "nothing")")
                }
                previous = step.to
            }
            if previous != phase { broken.append("run \(id): row says \(phase), path ends \(previous?.rawValue ?? "nowhere")") }
        }
        #expect(broken.isEmpty, "\(broken.prefix(10))")

        // No process of any run is left, and the file is sound.
        #expect(Self.marked(marker).isEmpty)
        #expect(try connection.scalar("PRAGMA integrity_check")?.string == "ok")

        let interrupted = try connection.scalar("SELECT count(*) FROM runs WHERE reason = 'interrupted'")?.int64 ?? 0
        let restarted = try connection.scalar("SELECT count(*) FROM transitions WHERE json_extract(detail, '$.reason') = 'restarted'")?.int64 ?? 0
        print("crash test: \(points) kill points, \(answers.count) answered triggers, \(ids.count) runs, "
              + "\(interrupted) interrupted, \(restarted) restarted")
        last.stop()
        withExtendedLifetime(daemons) {}
    }

    /// A run's process starts only once its `loading` is durable (write-ahead): a crash while that
    /// transition is being written leaves a run the history calls queued, which never ran, so
    /// recovery queues it again and it runs once. (Until session 29 the process started while
    /// `loading` was being written: the crash left it running, or ended, and recovery ran it again.
    /// Against that code this test fails most times, not always: a kill that lands before the spawn passes.)
    @Test("a crash after a run's start was decided but before its loading was written: its process runs once")
    func startWrittenAhead() throws {
        let marks = NSTemporaryDirectory() + "baton-marks-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: marks) }
        let config = """
            { maxConcurrentRuns: 1, actions: { long: {
                exec: ["sh", "-c", "echo $BATON_RUN_ID $$ >> \\"$MARKS\\"; exec sleep 300"], env: { MARKS: "\(marks)" },
                policy: "queue" } } }
            """
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "long", "--detach").stdout == "1\n")
        #expect(try daemon.baton("run", "long", "--detach").stdout == "2\n")   // queued behind run 1
        try daemon.waitForLog("run 1 long: queued → loading")
        // Hold the write lock: run 1's end and run 2's loading cannot be written...
        let holder = try WriteLockHolder(database: daemon.database)
        // ...while run 1 is cancelled, ends, and run 2's start is decided (live status: loading).
        let client = try Client(path: daemon.socket)
        try client.send(Request(op: .cancel, run: 1))
        guard Eventually.until("run 2 is loading in batond's live status", {
            let status = try? Client(path: daemon.socket).call(Request(op: .status))
            return (status?.actions ?? []).flatMap { $0.inFlight ?? [] }.contains { $0.id == 2 && $0.phase == .loading }
        }) else { return }
        daemon.crash()
        holder.release()
        let phases = try execute("/usr/bin/sqlite3", [daemon.database, "SELECT id, phase FROM runs ORDER BY id"])
        #expect(phases.stdout == "1|loading\n2|queued\n", "run 2's loading was never written")

        let restarted = try Daemon(config: config, reusing: daemon, name: "restarted")
        // (Not its `queued → loading` log line: in one try of three, on main's batond too, the restarted
        // batond logged none. Likely cause: recovery starts run 2 in `Backend` before `Daemon.startJournal`
        // observes the conductor, so a transition committed in between is never logged. Left as found.)
        // Its process under the restarted batond: the leader the history recorded, which wrote its mark.
        let leader = Eventually.value("run 2's process group in the history", within: 30, {
            try? execute("/usr/bin/sqlite3", [restarted.database, "SELECT pgid FROM runs WHERE id = 2 AND pgid IS NOT NULL"]).stdout
        }) { ($0 ?? "").isEmpty == false }
        let pgid = try #require(leader?.trimmingCharacters(in: .whitespacesAndNewlines))
        func runs() -> [Substring] {
            ((try? String(contentsOfFile: marks, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.hasPrefix("2 ") }
        }
        guard Eventually.until("run 2's process (in process group \(pgid)) wrote its mark", {
            runs().contains { Int32($0.split(separator: " ")[1]).flatMap(processGroup(of:)).map(String.init) == pgid }
        }) else { return }
        #expect(runs().count == 1, "run 2's process ran \(runs().count) times: \(runs())")
        _ = try restarted.baton("cancel", "long")
    }

    /// The process group of a live process (`/proc/PID/stat`'s fifth field), or nil.
    func processGroup(of pid: Int32) -> Int32? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 2 ? Int32(fields[2]) : nil
    }

    /// Whether a process exists and is not a zombie (an orphan's zombie waits for init to reap it).
    func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
    }
}

/// A process that holds SQLite's write lock on a database until released (`BEGIN IMMEDIATE`).
final class WriteLockHolder {
    private let process = Process()
    private let input = Pipe()

    init(database: String) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = ["-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
            c.execute('BEGIN IMMEDIATE')
            print('locked', flush=True)
            sys.stdin.readline()
            c.execute('ROLLBACK')
            """, database]
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        #expect(String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("locked"))
    }

    /// Lets the lock go and waits for the holder to exit.
    func release() {
        input.fileHandleForWriting.write(Data("\n".utf8))
        process.waitUntilExit()
    }
}
