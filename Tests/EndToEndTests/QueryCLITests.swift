import BatonCore
import BatonIPC
import BatonStore
import Foundation
import Testing

/// A history file with known runs, read by `baton --database` (no daemon).
final class SeededHistory {
    let directory: String
    let path: String
    let now = Timestamp.now
    static let hour: Int64 = 3_600_000_000

    struct Seed {
        var id: Int64
        var action: String
        var params: [String: String] = [:]
        var queuedHoursAgo: Double
        var phase: Phase
        var seconds: Double? = nil
        var error: String? = nil
    }

    /// 1 backup ok 72h ago 2s; 2 deploy prod failed 50h ago 5s; 3 deploy staging ok 26h ago 4s; 4 build ok 45m ago
    /// 65s; 5 build failed 30m ago 10s; 6 deploy prod cancelled while queued 10m ago; 7 build loading since 1m.
    static let seeds: [Seed] = [
        Seed(id: 1, action: "backup", queuedHoursAgo: 72, phase: .success, seconds: 2),
        Seed(id: 2, action: "deploy", params: ["env": "prod"], queuedHoursAgo: 50, phase: .failure, seconds: 5,
             error: "exited with status 3: disk full, \"really\""),
        Seed(id: 3, action: "deploy", params: ["env": "staging"], queuedHoursAgo: 26, phase: .success, seconds: 4),
        Seed(id: 4, action: "build", queuedHoursAgo: 0.75, phase: .success, seconds: 65),
        Seed(id: 5, action: "build", queuedHoursAgo: 0.5, phase: .failure, seconds: 10, error: "exited with status 1: test failed"),
        Seed(id: 6, action: "deploy", params: ["env": "prod"], queuedHoursAgo: 10.0 / 60, phase: .cancelled),
        Seed(id: 7, action: "build", queuedHoursAgo: 1.0 / 60, phase: .loading),
    ]

    init() async throws {
        directory = NSTemporaryDirectory() + "baton-seeded-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/history.sqlite"
        let store = try Store(path: path, options: .init(synchronous: .off))
        for seed in Self.seeds {
            let queued = Timestamp(microseconds: now.rawValue - Int64(seed.queuedHoursAgo * Double(Self.hour)))
            let key = seed.params.isEmpty ? seed.action : "\(seed.action) env=\(seed.params["env"]!)"
            let run = RunSnapshot(id: seed.id, action: seed.action, key: key, phase: .queued, policy: .queue, params: seed.params,
                                  trigger: Peer(uid: 0, gid: 0, pid: 1), queuedAt: queued)
            var entries: [JournalEntry] = [.created(run, Transition(runID: seed.id, seq: 1, from: nil, to: .queued, at: queued))]
            if seed.phase == .cancelled {
                entries.append(.transition(Transition(runID: seed.id, seq: 2, from: .queued, to: .cancelled, at: queued,
                                                      detail: TransitionDetail(reason: "cancelled", by: 0))))
            } else {
                let started = Timestamp(microseconds: queued.rawValue + 1_000)
                entries.append(.transition(Transition(runID: seed.id, seq: 2, from: .queued, to: .loading, at: started,
                                                      detail: TransitionDetail(attempt: 1))))
                if let seconds = seed.seconds {
                    let ended = Timestamp(microseconds: started.rawValue + Int64(seconds * 1_000_000))
                    entries.append(.transition(Transition(runID: seed.id, seq: 3, from: .loading, to: seed.phase, at: ended,
                                                          detail: TransitionDetail(reason: "exit", exitCode: seed.phase == .success ? 0 : 1,
                                                                                   error: seed.error))))
                }
            }
            await withCheckedContinuation { continuation in store.enqueue(entries) { _ in continuation.resume() } }
        }
        store.close()
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func baton(_ arguments: String...) throws -> Output {
        try execute(Binaries.baton, ["--socket", directory + "/nobody.sock", "--database", path] + arguments)
    }

    func ids(_ arguments: String...) throws -> [Int] {
        let output = try execute(Binaries.baton, ["--socket", directory + "/nobody.sock", "--database", path, "history", "--json"] + arguments)
        let runs = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [[String: Any]] ?? []
        return runs.compactMap { $0["id"] as? Int }
    }
}

/// Parses RFC 4180 CSV.
func parseCSV(_ text: String) -> [[String]] {
    var rows: [[String]] = [], row: [String] = [], field = ""
    var quoted = false
    var characters = Array(text)[...]
    while let c = characters.popFirst() {
        if quoted {
            if c == "\"" {
                if characters.first == "\"" { field.append("\""); characters.removeFirst() } else { quoted = false }
            } else { field.append(c) }
        } else if c == "\"" { quoted = true }
        else if c == "," { row.append(field); field = "" }
        else if c == "\n" { row.append(field); rows.append(row); row = []; field = "" }
        else { field.append(c) }
    }
    if !field.isEmpty || !row.isEmpty { row.append(field); rows.append(row) }
    return rows
}

@Suite("End to end: querying the history with baton", .serialized, .offPool)
struct QueryCLITests {
    @Test("each history filter, alone and combined, on a database with known runs")
    func filters() async throws {
        let history = try await SeededHistory()
        #expect(try history.ids() == [7, 6, 5, 4, 3, 2, 1])
        #expect(try history.ids("deploy") == [6, 3, 2])
        #expect(try history.ids("--action", "deploy") == [6, 3, 2])
        #expect(try history.ids("-a", "deploy", "-a", "backup") == [6, 3, 2, 1])
        #expect(try history.ids("--phase", "failure") == [5, 2])
        #expect(try history.ids("--phase", "success", "--phase", "cancelled") == [6, 4, 3, 1])
        #expect(try history.ids("--since", "2h") == [7, 6, 5, 4])
        #expect(try history.ids("--since", "2d", "--until", "1h") == [3])
        #expect(try history.ids("--since", "2000-01-01") == [7, 6, 5, 4, 3, 2, 1])
        #expect(try history.ids("--until", "2000-01-01T00:00").isEmpty)
        #expect(try history.ids("--param", "env=prod") == [6, 2])
        #expect(try history.ids("deploy", "--param", "env=staging") == [3])
        #expect(try history.ids("--reverse", "--limit", "2") == [1, 2])
        #expect(try history.ids("build", "--phase", "loading") == [7])
        let bad = try history.baton("history", "--since", "last tuesday")
        #expect(bad.code == 2)
        #expect(bad.stderr.contains("--since expects 30m, 2h, 7d, today, yesterday"))
        #expect(try history.baton("history", "--phase", "done").stderr.contains("--phase expects one of queued"))
        #expect(try history.baton("history", "--format", "xml").code == 2)
        // Global options after the command, as the README shows them.
        let after = try execute(Binaries.baton, ["history", "deploy", "--database", history.path, "--json"])
        #expect(after.code == 0, "\(after.stderr)")
        let rows = try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [[String: Any]] ?? []
        #expect(rows.map { $0["id"] as? Int } == [6, 3, 2], "\(after.stdout)")
    }

    @Test("formats: JSON, NDJSON and CSV parse and hold exactly the rows; the table fits, cuts errors with …, and shows UTC on request")
    func formats() async throws {
        let history = try await SeededHistory()
        let ndjson = try history.baton("history", "--format", "ndjson", "deploy")
        let lines = ndjson.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        let objects = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] ?? [:] }
        #expect(objects.compactMap { $0["id"] as? Int } == [6, 3, 2])
        #expect((objects[2]["params"] as? [String: String]) == ["env": "prod"])

        let csv = parseCSV(try history.baton("history", "--format", "csv", "--utc").stdout)
        #expect(csv.first == ["id", "action", "key", "phase", "policy", "queued_at", "started_at", "ended_at", "duration_s", "attempts",
                              "exit_code", "signal", "reason", "error", "params"])
        #expect(csv.count == 8)
        let two = try #require(csv.first { $0.first == "2" })
        #expect(two[1] == "deploy" && two[2] == "deploy env=prod" && two[3] == "failure")
        #expect(two[8] == "5.000")
        #expect(two[13] == "exited with status 3: disk full, \"really\"")
        #expect(two[14] == #"{"env":"prod"}"#)
        #expect(two[5].hasSuffix("Z"))
        let six = try #require(csv.first { $0.first == "6" })
        #expect(six[6] == "" && six[8] == "")

        let table = try execute(Binaries.baton, ["--database", history.path, "history", "--utc"], environment: ["COLUMNS": "80"])
        let rows = table.stdout.split(separator: "\n")
        #expect(rows.first?.hasPrefix("RUN  ACTION") == true)
        #expect(rows.first?.contains("QUEUED (UTC)") == true)
        #expect(rows.allSatisfy { $0.count <= 80 }, "\(rows)")
        #expect(rows.contains { $0.hasPrefix("2 ") && $0.hasSuffix("…") })
        #expect(rows.contains { $0.hasPrefix("4 ") && $0.contains("1m05s") })
    }

    @Test("stats agree with figures computed by hand")
    func stats() async throws {
        let history = try await SeededHistory()
        let output = try history.baton("stats", "--json")
        #expect(output.code == 0, "\(output.stderr)")
        let list = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [[String: Any]] ?? []
        let byAction = Dictionary(uniqueKeysWithValues: list.map { ($0["action"] as? String ?? "", $0) })
        #expect(byAction.keys.sorted() == ["backup", "build", "deploy"])
        let build = try #require(byAction["build"])
        #expect(build["success"] as? Int == 1 && build["failure"] as? Int == 1 && build["cancelled"] as? Int == 0)
        #expect(build["successRate"] as? Double == 0.5)
        #expect(build["p50"] as? Int == 65_000_000 && build["max"] as? Int == 65_000_000)
        #expect(build["failureStreak"] as? Int == 1)
        #expect((build["recent"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == [4, 5])
        let deploy = try #require(byAction["deploy"])
        #expect(deploy["success"] as? Int == 1 && deploy["failure"] as? Int == 1 && deploy["cancelled"] as? Int == 1)
        #expect(deploy["failureStreak"] as? Int == 0)
        #expect(deploy["p95"] as? Int == 4_000_000)
        let failedAt: Int64 = history.now.rawValue - 50 * SeededHistory.hour + 1_000 + 5_000_000
        #expect((deploy["lastFailure"] as? Int).map(Int64.init) == failedAt)
        // --since keeps only runs that ended since then.
        let recent = try JSONSerialization.jsonObject(with: Data(try history.baton("stats", "deploy", "--since", "1d", "--json").stdout.utf8))
            as? [[String: Any]] ?? []
        #expect(recent.count == 1)
        #expect(recent.first?["success"] as? Int == 0 && recent.first?["cancelled"] as? Int == 1)
        let table = try history.baton("stats")
        #expect(table.stdout.contains("build   2     1   1       0          50%   1m05s"), "\(table.stdout)")
        #expect(table.stdout.contains("1 failing"))
    }

    @Test("show: a run with a retry, a join and a rejection tells the whole story")
    func show() throws {
        let directory = NSTemporaryDirectory() + "baton-flaky-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gate = try FifoGate()
        let daemon = try Daemon(config: """
            { actions: { flaky: {
                exec: ["sh", "-c", "if [ -e \\"$MARK\\" ]; then cat \\"$GATE\\" > /dev/null; exit 0; fi; touch \\"$MARK\\"; echo 'first try failed' >&2; exit 4"],
                env: { MARK: "\(directory)/mark", GATE: "\(gate.path)" },
                policy: "join", policies: ["reject"], retry: { attempts: 1, backoff: "10ms" } } } }
            """)
        #expect(try daemon.baton("run", "flaky", "-d").stdout == "1\n")
        try daemon.waitForLog("run 1 flaky: retrying → loading (attempt 2)")
        let joined = Thread { _ = try? daemon.baton("run", "flaky") }
        joined.start()
        #expect(try daemon.baton("run", "flaky", "--policy", "reject").code == 75)
        // The joined caller is in once its trigger is recorded.
        try Eventually.until("the joined caller's trigger recorded", within: 30) {
            try execute("/usr/bin/sqlite3", [daemon.database, "SELECT count(*) FROM triggers WHERE decision = 'joined'"]).stdout == "1\n"
        }
        gate.release()
        #expect(try daemon.baton("wait", "1").code == 0)
        let story = try daemon.baton("show", "1")
        #expect(story.stdout.contains("attempts: 2"))
        #expect(story.stdout.contains("loading → retrying"))
        #expect(story.stdout.contains("first try failed"))
        #expect(story.stdout.contains("retrying → loading  (attempt 2)"))
        #expect(story.stdout.contains("other triggers: 1 joined, 1 rejected"))
        #expect(story.stdout.contains("triggered by root (uid 0"))
        #expect(story.stdout.contains("+"))
    }

    @Test("watch prints the transitions of a run started after it, and outlives batond's stop, waiting for the next one")
    func watch() throws {
        let daemon = try Daemon(config: #"{ actions: { hello: { exec: ["true"] } } }"#)
        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: Binaries.baton)
        watcher.arguments = ["--socket", daemon.socket, "watch"]
        let out = Pipe(), err = Pipe()
        watcher.standardOutput = out
        watcher.standardError = err
        try watcher.run()
        // It says so on stderr once it is subscribed.
        var said = Data()
        while !String(decoding: said, as: UTF8.self).contains("watching") {
            let chunk = err.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            said += chunk
        }
        #expect(try daemon.baton("run", "hello").code == 0)
        var seen = ""
        while !seen.contains("loading → success") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen += String(decoding: chunk, as: UTF8.self)
        }
        let lines = seen.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.first?.contains("run 1  hello  new → queued") == true)
        #expect(lines.last?.contains("run 1  hello  loading → success") == true)
        // batond's stop ends the watch with its last line: the watch waits for the next batond
        // (`RestartAnswerTests.watchRidesItOut`) until Ctrl-C, which ends it without an error.
        daemon.stop()
        let next = try Daemon(config: #"{ actions: { hello: { exec: ["true"] } } }"#, reusing: daemon)
        // Still watching, for the next batond (`RestartAnswerTests.watchRidesItOut` sees it go on there).
        #expect(watcher.isRunning)
        // SIGKILL: the signals Ctrl-C and SIGTERM would send may be blocked in a child of the test process.
        kill(watcher.processIdentifier, SIGKILL)
        watcher.waitUntilExit()
        next.stop()
    }

    @Test("history, show and stats read the file while batond writes: every trigger still succeeds")
    func readWhileWriting() throws {
        let daemon = try Daemon(config: #"{ actions: { a: { exec: ["true"], policy: "join", params: { k: {} }, keyParams: ["k"] } } }"#)
        let codes = Collected<Int32>()
        let writers = DispatchGroup()
        for index in 0..<4 {
            writers.enter()
            Thread.detachNewThread {
                // Writers use the socket directly; the reads below are the real CLI on the file.
                for round in 0..<25 {
                    let answer = try? Client(path: daemon.socket).call(Request(op: .trigger, action: "a", params: ["k": "\(index)-\(round)"]))
                    codes.append(answer?.run?.phase == .success ? 0 : 1)
                }
                writers.leave()
            }
        }
        var reads = 0
        while writers.wait(timeout: .now()) == .timedOut {
            let file = ["--database", daemon.database]
            #expect(try execute(Binaries.baton, file + ["history", "--limit", "5"]).code == 0)
            #expect(try execute(Binaries.baton, file + ["stats", "--json"]).code == 0)
            reads += 1
        }
        #expect(codes.all.count == 100 && codes.all.allSatisfy { $0 == 0 })
        #expect(reads > 0)
        let count = try execute(Binaries.baton, ["--database", daemon.database, "history", "--limit", "1000", "--json"])
        #expect((try JSONSerialization.jsonObject(with: Data(count.stdout.utf8)) as? [Any])?.count == 100)
    }
}
