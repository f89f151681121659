import BatonCore
import BatonIPC
import CBatonSystem
import Foundation
import Testing

/// The guard of a fleet host's runs (`batond --guard-runs`): one per incarnation, replaced when it
/// dies, and the one that kills a frozen host's runs.
@Suite("End to end: the guard of a fleet host's runs", .serialized, .offPool)
struct FleetGuardTests {
    @Test("a guard killed with SIGKILL is replaced before the next run starts: batond killed after it still takes its run along")
    func deadGuardIsReplaced() throws {
        let gate = try FifoGate()
        // A short lease: batond gone, the guard kills at the lease's deadline (issue 41, part 3).
        let host = try FleetTests.fleet(1, actions: FleetTests.gated(gate), lease: "2s")[0]
        let batond = host.process.processIdentifier
        let old = try #require(Self.guards(of: batond).first)
        #expect(Self.guards(of: batond) == [old])
        try Self.signalAndWait(old)
        let id = try #require(try FleetTests.trigger(host, "gated").run?.id)
        let pgid = try #require(try FleetTests.processGroup(of: id, gate: gate))
        // Only while the group has members: an empty group's id is a free pid, and another test's
        // batond (Foundation puts each child in a group of its own) may have it by now.
        defer { if FleetTests.liveMembers(of: pgid) > 0 { kill(-pgid, SIGKILL) } }
        let guards = Self.guards(of: batond)
        #expect(guards.count == 1 && guards.first != old, "guards: \(guards), the killed one \(old)")
        host.crash()
        Eventually.until("the run's processes gone with batond (its guard was replaced)", within: 10) { FleetTests.liveMembers(of: pgid) == 0 }
    }

    @Test("the guard starts with no signal blocked, whichever of batond's threads started it: SIGTERM ends it, and batond starts another")
    func guardTakesSignals() throws {
        let host = try FleetTests.fleet(1, actions: #"quick: { exec: ["true"] },"#)[0]
        let batond = host.process.processIdentifier
        let first = try #require(Self.guards(of: batond).first)
        #expect(ProcStatus.signals("SigBlk", of: first) == 0)
        let descriptors = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(first)/fd")) ?? []).compactMap { Int32($0) }.sorted()
        // Its stdio and, on 3, its end of batond's pipe: nothing else of batond's (this batond
        // has a socket of the test runner's without close-on-exec, as Foundation's Process leaves them).
        #expect(descriptors == [0, 1, 2, 3], "the guard holds \(descriptors)")
        try Self.signalAndWait(first, SIGTERM)
        #expect(try host.baton("run", "quick").code == 0)
        let next = try #require(Self.guards(of: batond).first)
        #expect(next != first && ProcStatus.signals("SigBlk", of: next) == 0)
    }

    @Test("one guard per incarnation: after two fences the host has one guard, the previous ones gone")
    func oneGuardAfterFences() throws {
        let server = try Postgres.own()
        let host = try FleetTests.fleet(1, actions: #"quick: { exec: ["true"] },"#, lease: "2s", server: server)[0]
        let batond = host.process.processIdentifier
        #expect(Self.guards(of: batond).count == 1)
        for round in 1...2 {
            try server.stop()
            try host.waitForLog("fenced: ", count: round)
            try server.start()
            try host.waitForLog("joined the fleet", count: round + 1)
        }
        #expect(Self.guards(of: batond).count == 1, "\(Self.guards(of: batond))")
        #expect(try host.baton("run", "quick").code == 0)
    }

    @Test("a frozen host's runs are killed by its guard before its lease can end: another host never overlaps them, and cancel never says ended while they live")
    func frozenHost() throws {
        let log = NSTemporaryDirectory() + "baton-frozen-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: log) }
        let actions = """
            long: { exec: ["sh", "-c", "echo start $(date +%s%N) $$ $BATON_RUN_ID >> \\"$LOG\\"; exec sleep 300"], env: { LOG: "\(log)" } },
            """
        // The frozen host's lease is short (the test waits for it to run out); the other host's is
        // long, so that a late renewal on a loaded machine does not fence the host the test asks.
        let conninfo = try Postgres.server().database()
        let frozen = try Daemon(config: #"{ postgres: "\#(conninfo)", host: "web-1", lease: "4s", actions: { \#(actions) } }"#)
        try frozen.waitForLog("joined the fleet")
        let other = try Daemon(config: #"{ postgres: "\#(conninfo)", host: "web-2", lease: "15s", actions: { \#(actions) } }"#)
        try other.waitForLog("joined the fleet")
        let first = try #require(try FleetTests.trigger(frozen, "long").run?.id)
        try Eventually.until("the first run started", within: 20) { !(try FleetPartitionTests.starts(log)).isEmpty }
        let (_, pid) = try #require(try FleetPartitionTests.starts(log).first)
        // Through a pidfd: by the end the pid may belong to another test's process.
        let pidfd = baton_pidfd_open(pid)
        defer { if pidfd >= 0 { _ = baton_pidfd_signal(pidfd, SIGKILL); close(pidfd) } }
        let died = FleetPartitionTests.watchDeath(of: pid)
        frozen.signal(SIGSTOP)
        defer { frozen.signal(SIGCONT) }
        // The other host reaps the frozen one once its lease has run out as the database counts it.
        let ended: RunSnapshot?
        do {
            ended = try Client(path: other.socket).call(Request(op: .wait, run: first)).run
        } catch {
            Issue.record("the wait on web-2 failed: \(error)\nweb-2 said:\n\(other.stderr)\nweb-1 said:\n\(frozen.stderr)")
            return
        }
        #expect(ended?.phase == .failure && ended?.reason == "host_lost", "\(String(describing: ended))")
        // By then the run's process is gone: its guard, not frozen, killed it at the fence's time.
        #expect(!Self.isLive(pid), "the frozen host's run still lives after the other host ended it host_lost")
        let cancel = try other.baton("cancel", String(first))
        #expect(!Self.isLive(pid), "cancel answered \(cancel.stdout) \(cancel.stderr) while the process lived")
        let second = try #require(try FleetTests.trigger(other, "long").run?.id)
        let starts = try Eventually.value("two runs started", within: 20, { try FleetPartitionTests.starts(log) }) { $0.count == 2 }
        frozen.signal(SIGCONT)
        let deathTime = try #require(died.value(timeout: 20))
        if starts.count == 2 {
            #expect(deathTime < starts[1].at, "the frozen host's run died at \(deathTime), the other host's started at \(starts[1].at)")
        }
        // Thawed, the host fences itself (its renewals stopped) and rejoins.
        try frozen.waitForLog("fenced: ")
        try frozen.waitForLog("joined the fleet", count: 2)
        _ = try other.baton("cancel", String(second))
    }

    /// The live guards of the batond with that pid (zombies waiting for a reaper do not count).
    static func guards(of batond: Int32) -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { entry -> Int32? in
            guard let pid = Int32(entry), let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return nil }
            let arguments = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard arguments.count >= 3, arguments[1] == "--guard-runs", arguments[2] == String(batond), isLive(pid) else { return nil }
            return pid
        }.sorted()
    }

    /// Whether the process exists and has not exited (a zombie has).
    static func isLive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
    }

    /// Sends a process `signal` (SIGKILL unless said) and waits on its pidfd until it is gone.
    static func signalAndWait(_ pid: Int32, _ signal: Int32 = SIGKILL) throws {
        let fd = baton_pidfd_open(pid)
        try #require(fd >= 0)
        defer { close(fd) }
        kill(pid, signal)
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while poll(&poller, 1, 10_000) < 0 && errno == EINTR {}
        #expect(poller.revents != 0, "\(pid) did not die")
    }
}
