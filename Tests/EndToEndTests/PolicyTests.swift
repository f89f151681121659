import BatonCore
import BatonIPC
import Foundation
import Testing

/// A FIFO that gated actions read (`cat "$GATE"`): each `release()` lets the reading run end.
final class FifoGate: Sendable {
    let directory: String
    let path: String

    init() throws {
        directory = NSTemporaryDirectory() + "baton-gate-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = directory + "/gate"
        guard mkfifo(path, 0o600) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    /// Opens the FIFO for writing (waiting for a reader), writes a line and closes it: the
    /// reader sees its end and exits 0. Release a second run only after the first has ended,
    /// or the first reader may take both.
    /// A gate no run opens within 60 s is a failed test, not a hung suite: the open does not block.
    func release() {
        release(opened())
    }

    /// Waits for a gated run to open the gate (at most 60 s) and opens it for writing, without
    /// releasing it: the run's process has started and reached its gate. -1, with an issue
    /// recorded, when no run opened it.
    func opened() -> Int32 {
        // ENXIO: no reader yet, the gated run has not opened the gate.
        var fd: Int32 = -1
        Eventually.until("a gated run opened the gate \(path) (errno \(errno))", within: 60) {
            fd = open(path, O_WRONLY | O_NONBLOCK)
            return fd >= 0 || errno != ENXIO
        }
        if fd < 0 { Issue.record("the gate \(path) not opened for writing (errno \(errno))") }
        return fd
    }

    /// Releases the gate `fd` (from `opened`): writes a line and closes it. A gate whose reader
    /// has gone (poll says POLLERR: no reader left) is an issue, closed with no write (no SIGPIPE).
    func release(_ fd: Int32) {
        guard fd >= 0 else { return }
        var end = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        if poll(&end, 1, 0) == 1 && end.revents & Int16(POLLERR) != 0 {
            Issue.record("the gated run's process no longer reads the gate \(path)")
        } else {
            _ = write(fd, "go\n", 3)
        }
        close(fd)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }
}

/// Runs `body` on `count` threads at once and waits for all of them, at most `seconds` (then
/// records an issue and returns, leaving those still running to end on their own).
func inParallel(_ count: Int, within seconds: Double = 300, sourceLocation: SourceLocation = #_sourceLocation,
                _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            body(index)
            group.leave()
        }
    }
    if group.wait(timeout: .now() + seconds) == .timedOut {
        Issue.record("not within \(seconds) s: \(count) threads in parallel ended", sourceLocation: sourceLocation)
    }
}

/// Collects values from many threads.
final class Collected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Value] = []
    func append(_ item: Value) { lock.withLock { items.append(item) } }
    var all: [Value] { lock.withLock { items } }
}

@Suite("End to end: single-flight policies over the socket", .serialized, .offPool)
struct PolicyTests {
    static func config(gate: FifoGate, log: String = "/dev/null") -> String {
        """
        {
          actions: {
            gated: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" },
                     policy: "reject", policies: ["join", "queue"] },
            marked: {
              exec: ["sh", "-c", "trap 'echo end $BATON_RUN_ID >> \\"$LOG\\"; exit 143' TERM; echo start $BATON_RUN_ID >> \\"$LOG\\"; sleep 300 & wait"],
              env: { LOG: "\(log)" }, policy: "replace", killGrace: "10s",
            },
            deploy: {
              exec: ["sleep", "300"], policy: "reject",
              params: { env: { pattern: "^(staging|prod)$", default: "staging" }, note: { default: "" } },
              keyParams: ["env"],
            },
          },
        }
        """
    }

    static func trigger(_ daemon: Daemon, _ action: String, policy: Policy? = nil, params: [String: String]? = nil,
                        detach: Bool = true) throws -> Response {
        let client = try Client(path: daemon.socket)
        return try client.call(Request(op: .trigger, action: action, params: params, policy: policy, detach: detach))
    }

    static func waitFor(_ daemon: Daemon, run: Int64) throws -> RunSnapshot? {
        try Client(path: daemon.socket).call(Request(op: .wait, run: run)).run
    }

    @Test("reject: 40 concurrent triggers give 1 run and 39 busy answers naming it")
    func rejectStorm() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        let answers = Collected<Response>()
        inParallel(40) { _ in if let answer = try? Self.trigger(daemon, "gated") { answers.append(answer) } }
        let all = answers.all
        #expect(all.count == 40)
        let created = all.filter { $0.ok == true }
        #expect(created.count == 1)
        #expect(created.first?.decision == .created)
        let busy = all.filter { $0.error?.code == .busy }
        #expect(busy.count == 39)
        #expect(busy.allSatisfy { $0.error?.run == created.first?.run?.id })
        gate.release()
        #expect(try Self.waitFor(daemon, run: 1)?.phase == .success)
        let show = try daemon.baton("show", "1", "--json")
        let detail = try JSONSerialization.jsonObject(with: Data(show.stdout.utf8)) as? [String: Any]
        let triggers = detail?["triggers"] as? [[String: Any]] ?? []
        #expect(triggers.count == 39)
        #expect(triggers.allSatisfy { $0["decision"] as? String == "rejected" })
    }

    @Test("join: 30 waiting clients share one run; a client that disconnects cancels nothing")
    func joinStorm() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        // A waiting client that goes away: the run goes on.
        let leaver = try Client(path: daemon.socket)
        _ = try leaver.send(Request(op: .trigger, action: "gated", policy: .join))
        let first = try #require(try leaver.receive())
        #expect(first.event == "update")
        let runID = try #require(first.run?.id)
        _ = consume leaver

        let joined = DispatchGroup()
        let outcomes = Collected<Response>()
        for _ in 0..<30 { joined.enter() }
        let everyone = DispatchGroup()
        everyone.enter()
        Thread.detachNewThread {
            inParallel(30, within: 110) { _ in   // inside the test's own 120 s waits below
                var entered = false
                guard let client = try? Client(path: daemon.socket),
                      let answer = try? client.call(Request(op: .trigger, action: "gated", policy: .join), onEvent: { _ in
                          if !entered { entered = true; joined.leave() }
                      })
                else { if !entered { joined.leave() }; return }
                outcomes.append(answer)
            }
            everyone.leave()
        }
        // Every client has its first update, so every trigger has joined; now let the run end.
        // Bounded: a client batond never answers fails the test rather than hang it.
        guard joined.wait(timeout: .now() + 120) == .success else {
            gate.release()
            Issue.record("not within 120 s: the 30 joined clients' first updates")
            return
        }
        #expect(try daemon.baton("status").stdout.contains("loading"))
        gate.release()
        guard everyone.wait(timeout: .now() + 120) == .success else {
            Issue.record("not within 120 s: the 30 joined clients' answers")
            return
        }
        let all = outcomes.all
        #expect(all.count == 30)
        #expect(all.allSatisfy { $0.ok == true && $0.run?.id == runID && $0.run?.phase == .success && $0.shared == true })
        let rows = try execute("/usr/bin/sqlite3", [daemon.database,
            "SELECT count(*), (SELECT count(*) FROM triggers WHERE decision = 'joined') FROM runs"])
        #expect(rows.stdout == "1|30\n")
    }

    @Test("queue: 30 triggers while a run is in flight make one follow-up; 29 coalesce into it")
    func queueStorm() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        let first = try Self.trigger(daemon, "gated", policy: .queue)
        #expect(first.decision == .created)
        let answers = Collected<Response>()
        inParallel(30) { _ in if let answer = try? Self.trigger(daemon, "gated", policy: .queue) { answers.append(answer) } }
        let all = answers.all
        #expect(all.count == 30)
        #expect(all.filter { $0.decision == .followUp }.count == 1)
        #expect(all.filter { $0.decision == .coalesced }.count == 29)
        #expect(Set(all.compactMap { $0.run?.id }) == [2])
        gate.release()   // run 1 ends
        #expect(try Self.waitFor(daemon, run: 1)?.phase == .success)
        gate.release()   // run 2, which started after it, ends
        #expect(try Self.waitFor(daemon, run: 2)?.phase == .success)
        let order = try execute("/usr/bin/sqlite3", [daemon.database,
            "SELECT (SELECT ended_at FROM runs WHERE id = 1) <= (SELECT started_at FROM runs WHERE id = 2), count(*) FROM runs"])
        #expect(order.stdout == "1|2\n")
    }

    @Test("replace: 15 concurrent replacing triggers; each run's processes are gone before the next starts")
    func replaceStorm() throws {
        let gate = try FifoGate()
        let log = gate.directory + "/marks"
        let daemon = try Daemon(config: Self.config(gate: gate, log: log))
        let answers = Collected<Response>()
        inParallel(15) { _ in if let answer = try? Self.trigger(daemon, "marked") { answers.append(answer) } }
        let ids = answers.all.compactMap { $0.run?.id }.sorted()
        #expect(ids == Array(1...15))
        // Every run but the newest ends cancelled, recorded as replaced by a later run.
        for id in ids.dropLast() {
            let run = try #require(try Self.waitFor(daemon, run: id))
            #expect(run.phase == .cancelled)
            #expect(run.reason == "replaced")
            #expect(run.error?.hasPrefix("replaced by run ") == true)
        }
        try daemon.waitForLog("run 15 marked: queued → loading")
        // The process group is recorded once the process has started, in a write after `loading`'s
        // (a CI run under load read it before that write): wait for it, bounded.
        let pgid = try Eventually.value("run 15's process group recorded", { try execute("/usr/bin/sqlite3", [daemon.database, "SELECT pgid FROM runs WHERE id = 15"]) }) {
            !$0.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty
        }
        let cancel = try daemon.baton("cancel", "15")
        #expect(cancel.code == 0)
        #expect(try Self.waitFor(daemon, run: 15)?.phase == .cancelled)
        // The marks never show two runs at once: start a, end a, start b, end b, ... The trap is
        // set before the start mark, so every start has its end; a run stopped between the two
        // writes only its end (a run stopped before its trap writes nothing).
        let marks = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map(String.init)
        let started = Set(marks.filter { $0.hasPrefix("start ") }.map { $0.dropFirst(6) })
        var open: String?
        for mark in marks {
            let parts = mark.split(separator: " ")
            if parts[0] == "start" { #expect(open == nil, "\(marks)"); open = String(parts[1]) }
            else if open == nil { #expect(!started.contains(parts[1]), "\(marks)") }
            else { #expect(open == String(parts[1]), "\(marks)"); open = nil }
        }
        #expect(marks.last == "end 15")
        if let group = Int32(pgid.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) {
            #expect(kill(-group, 0) == -1 && errno == ESRCH, "process group \(group) still alive")
        } else {
            Issue.record("no pgid recorded for run 15")
        }
    }

    @Test("keys: deploy env=staging and env=prod run side by side; a second env=prod is busy; bad params name the param")
    func keys() throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        #expect(try daemon.baton("run", "deploy", "-p", "env=staging", "--detach").stdout == "1\n")
        #expect(try daemon.baton("run", "deploy", "-p", "env=prod", "-p", "note=x; rm -rf /", "--detach").stdout == "2\n")
        let busy = try daemon.baton("run", "deploy", "-p", "env=prod")
        #expect(busy.code == 75)
        #expect(busy.stderr.contains("run 2"))
        try daemon.waitForLog("run 1 deploy env=staging: queued → loading")
        try daemon.waitForLog("run 2 deploy env=prod: queued → loading")
        let status = try daemon.baton("status", "--json")
        let loading = (try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [[String: Any]] ?? [])
            .flatMap { ($0["inFlight"] as? [[String: Any]]) ?? [] }
            .filter { $0["phase"] as? String == "loading" }
            .compactMap { $0["key"] as? String }
        #expect(Set(loading) == ["deploy env=staging", "deploy env=prod"])

        let pattern = try daemon.baton("run", "deploy", "-p", "env=qa")
        #expect(pattern.code == 2)
        #expect(pattern.stderr.contains("env"))
        #expect(pattern.stderr.contains("^(staging|prod)$"))
        let undeclared = try daemon.baton("run", "deploy", "-p", "region=eu")
        #expect(undeclared.code == 2)
        #expect(undeclared.stderr.contains("region"))

        let cancelled = try daemon.baton("cancel", "deploy", "--key", "deploy env=prod")
        #expect(cancelled.code == 0)
        #expect(try Self.waitFor(daemon, run: 2)?.phase == .cancelled)
        #expect(try daemon.baton("status", "--json").stdout.contains("deploy env=staging"))
        #expect(try daemon.baton("cancel", "deploy").code == 0)
        let show = try daemon.baton("show", "2", "--json")
        #expect(show.stdout.contains("x; rm -rf /"))
        let canceller = try execute("/usr/bin/sqlite3", [daemon.database,
            "SELECT json_extract(detail, '$.by'), json_extract(detail, '$.reason') FROM transitions WHERE run_id = 2 AND to_phase = 'cancelled'"])
        #expect(canceller.stdout == "\(getuid())|cancelled\n")
        let policy = try daemon.baton("run", "deploy", "--policy", "join")
        #expect(policy.code == 2)
        #expect(policy.stderr.contains("does not allow policy join"))
    }
}
