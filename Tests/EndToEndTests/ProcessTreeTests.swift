import BatonCore
import Foundation
import Testing

/// A run is its whole process tree: a `setsid` child, a double fork and a process that ignores
/// SIGTERM are stopped by cancel, timeout, replace, the leader's exit, shutdown, and a restart
/// after kill -9; a replacing or follow-up run never starts while one lives. In both modes: a
/// cgroup per attempt (batond runs as root here) and the process group, subreaper and tag.
@Suite("End to end: a run's whole process tree", .serialized, .offPool)
struct ProcessTreeTests {
    enum Mode: String, CaseIterable, Sendable {
        case cgroup, processGroup
    }

    /// A tree whose every process sleeps for 360N.MARK seconds, so that /proc finds it: a setsid
    /// session (its child ignores SIGTERM), a double fork, and a plain child. The leader waits
    /// until all four exist, records how many of the previous run's were alive when it began,
    /// then runs `then`.
    static func tree(_ mark: String, then: String, overlap: String) -> String {
        let script = """
            echo $(pgrep -c -f '^sleep 360[1-4][.]\(mark)') >> \(overlap); \
            setsid sh -c '(trap "" TERM; exec sleep 3601.\(mark)) & exec sleep 3602.\(mark)' & \
            (sh -c 'sleep 3603.\(mark) &' &); \
            sleep 3604.\(mark) & \
            while [ $(pgrep -c -f '^sleep 360[1-4][.]\(mark)') -lt 4 ]; do sleep 0.01; done; \(then)
            """
        return "[\"sh\", \"-c\", \(String(reflecting: script))]"
    }

    struct Tree {
        let mark = String(format: "%06d", Int.random(in: 1...999_999))
        let directory = NSTemporaryDirectory() + "baton-tree-" + UUID().uuidString
        var overlap: String { directory + "/overlap" }

        init() throws { try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true) }

        /// The leftover, replace and follow-up actions run without the shim (`survivesRestart: false`),
        /// as they did when these tests were written; `hangs` runs under it (a crash adopts it). With
        /// the shim as leader, `exits` once left a process alive past its run's end in process-group
        /// mode (ci23, cause not found yet: issue 41's note).
        func config(_ mode: Mode) -> String {
            """
            {
              processTree: "\(mode.rawValue)",
              shutdownGrace: "100ms",
              actions: {
                exits: { survivesRestart: false, exec: \(ProcessTreeTests.tree(mark, then: "echo left", overlap: overlap)), killGrace: "200ms" },
                hangs: { exec: \(ProcessTreeTests.tree(mark, then: "sleep 60", overlap: overlap)), killGrace: "200ms", timeout: "60s" },
                times: { survivesRestart: false, exec: \(ProcessTreeTests.tree(mark, then: "sleep 60", overlap: overlap)), killGrace: "200ms", timeout: "1s" },
                replaces: { survivesRestart: false, exec: \(ProcessTreeTests.tree(mark, then: "sleep 60", overlap: overlap)), killGrace: "200ms", policy: "replace" },
                follows: { survivesRestart: false, exec: \(ProcessTreeTests.tree(mark, then: "sleep 0.3", overlap: overlap)), killGrace: "200ms", policy: "queue" },
                keeps: { exec: ["sh", "-c", "setsid sleep 3605.\(mark) &"], leftovers: "keep" },
              },
            }
            """
        }

        /// The pids whose command line carries this tree's mark (`sleeping`: only its four sleeps).
        func alive(sleeping: Bool = false) -> [Int32] {
            let me = getpid()
            return ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }.filter { pid in
                guard pid != me, let line = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"),
                      let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), !stat.contains(") Z ") else { return false }
                let text = String(decoding: line, as: UTF8.self)
                return text.contains(".\(mark)") && (!sleeping || text.hasPrefix("sleep\u{0}360"))
            }
        }

        /// Each live process of the tree as `pid ppid pgid state cmdline`, for a failure's message.
        func described() -> String {
            alive().map { pid in
                let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
                let fields = stat.split(separator: ")").last.map { $0.split(separator: " ").prefix(4).joined(separator: " ") } ?? "?"
                let line = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { String(decoding: $0, as: UTF8.self) } ?? ""
                return "\(pid) \(fields) \(line.replacingOccurrences(of: "\u{0}", with: " "))"
            }.joined(separator: "; ")
        }

        /// Waits (bounded) until the tree's four processes run.
        func waitForTree() {
            Eventually.until("the tree's four processes running: \(described())", within: 30) { alive(sleeping: true).count >= 4 }
        }

        /// How many of the previous run's processes each run saw when it began.
        var overlaps: [Int] {
            ((try? String(contentsOfFile: overlap, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { Int($0) }
        }

        func cleanUp() {
            for pid in alive() { kill(pid, SIGKILL) }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    static func detail(_ daemon: Daemon, run: Int64) throws -> TransitionDetail? {
        let output = try daemon.baton("show", String(run), "--json")
        let detail = try JSONDecoder().decode(RunDetail.self, from: Data(output.stdout.utf8))
        return detail.transitions.last?.detail
    }

    @Test("""
        status and --check-config say which mode is in force; --check-config, run from here (no unit), says its lines describe \
        this invocation and what batond.service gets under systemd, unless the config asks for no cgroup
        """, arguments: Mode.allCases)
    func modeShown(_ mode: Mode) throws {
        let tree = try Tree()
        defer { tree.cleanUp() }
        let daemon = try Daemon(config: tree.config(mode))
        let expected = mode == .cgroup ? "a cgroup per attempt under /" : "process group, subreaper and environment tag"
        #expect(try daemon.baton("status").stdout.contains("processes: \(expected)"))
        let check = try execute(Binaries.batond, ["--check-config", daemon.configPath])
        #expect(check.code == 0 && check.stdout.contains("processes: \(expected)"), "\(check)")
        let unitless = try execute("/usr/bin/env", ["-u", "INVOCATION_ID", Binaries.batond, "--check-config", daemon.configPath])
        let noted = unitless.stdout.contains("\nnote: the processes and limits lines describe this invocation (uid ")
            && unitless.stdout.contains("batond.service under systemd, with its Delegate=yes, gets a cgroup of its own")
        #expect(noted == (mode == .cgroup), "\(unitless)")
    }

    @Test("the leader exits: what it left is stopped before the run's end is recorded, and counted", arguments: Mode.allCases)
    func leaderExit(_ mode: Mode) throws {
        let tree = try Tree()
        defer { tree.cleanUp() }
        let daemon = try Daemon(config: tree.config(mode))
        let run = try daemon.baton("run", "exits")
        #expect(run.code == 0, "\(run)")
        #expect(tree.alive().isEmpty, "nothing of the run lives once its end is told: \(tree.described())")
        // The four sleeps, and the double fork's middle shells where they had not finished exiting
        // when the leader did (a loaded machine): each was alive and is counted.
        let leftovers = try Self.detail(daemon, run: 1)?.leftovers ?? 0
        #expect((4...6).contains(leftovers), "\(leftovers)")
        #expect(try daemon.baton("show", "1").stdout.contains("\(leftovers) leftover processes"))
    }

    @Test("timeout and cancel stop the whole tree, SIGTERM-deaf and setsid processes included", arguments: Mode.allCases)
    func timeoutAndCancel(_ mode: Mode) throws {
        let tree = try Tree()
        defer { tree.cleanUp() }
        let daemon = try Daemon(config: tree.config(mode))
        let timedOut = try daemon.baton("run", "times")
        #expect(timedOut.code != 0 && timedOut.stdout.contains("timed out"), "\(timedOut)")
        #expect(tree.alive().isEmpty)
        #expect(try daemon.baton("run", "hangs", "--detach").code == 0)
        tree.waitForTree()
        #expect(tree.alive(sleeping: true).count == 4)
        #expect(try daemon.baton("cancel", "hangs").code == 0)
        #expect(tree.alive().isEmpty, "cancel returns once the run has ended")
    }

    @Test("a replacing run and a follow-up never start while a process of the run before lives", arguments: Mode.allCases)
    func noOverlap(_ mode: Mode) throws {
        let tree = try Tree()
        defer { tree.cleanUp() }
        let daemon = try Daemon(config: tree.config(mode))
        #expect(try daemon.baton("run", "replaces", "--detach").code == 0)
        tree.waitForTree()
        #expect(try daemon.baton("run", "replaces", "--detach").code == 0)
        tree.waitForTree()
        #expect(try daemon.baton("cancel", "replaces").code == 0)
        // A follow-up queued behind a run whose leader exits and leaves its tree behind.
        #expect(try daemon.baton("run", "follows", "--detach").code == 0)
        #expect(try daemon.baton("run", "follows").code == 0)
        #expect(try daemon.baton("wait", "3").code == 0)
        #expect(tree.overlaps == [0, 0, 0, 0], "each run saw none of the last one's processes: \(tree.overlaps)")
        #expect(tree.alive().isEmpty, "alive: \(tree.described()); runs: \((try? daemon.baton("history").stdout) ?? "?")")
    }

    /// `survivesRestart: false`: a run that survives restarts is handed to its shim instead (`HandOverTests`).
    @Test("shutdown stops the tree of every run that does not survive restarts before batond exits", arguments: Mode.allCases)
    func shutdown(_ mode: Mode) throws {
        let tree = try Tree()
        defer { tree.cleanUp() }
        let daemon = try Daemon(config: tree.config(mode).replacingOccurrences(of: "hangs: {", with: "hangs: { survivesRestart: false,"))
        #expect(try daemon.baton("run", "hangs", "--detach").code == 0)
        tree.waitForTree()
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0)
        #expect(tree.alive().isEmpty)
    }

    /// `survivesRestart: false`: as before the shim, recovery kills the run's tree.
    @Test("kill -9 of batond, then a restart: recovery kills what the crashed run left", arguments: Mode.allCases)
    func crashAndRestart(_ mode: Mode) throws {
        let tree = try Tree()
        defer { tree.cleanUp() }
        let config = tree.config(mode).replacingOccurrences(of: "hangs: {", with: "hangs: { survivesRestart: false,")
        let daemon = try Daemon(config: config)
        #expect(try daemon.baton("run", "hangs", "--detach").code == 0)
        tree.waitForTree()
        daemon.crash()
        #expect(tree.alive(sleeping: true).count == 4, "a crash leaves the tree running")
        let again = try Daemon(config: config, reusing: daemon)
        defer { again.stop() }
        #expect(tree.alive().isEmpty, "killed before batond says it is ready")
        // The run's end is decided before batond is ready and written by the store's writer
        // after (a full disk must not keep batond from serving): `show` finds it once committed.
        try Eventually.value("baton show 1 says interrupted", { try again.baton("show", "1").stdout }) { $0.contains("interrupted") }
    }

    @Test("kill -9 of batond, then a restart: the run's tree is adopted, left running, and stopped whole by a cancel", arguments: Mode.allCases)
    func crashAndAdopt(_ mode: Mode) throws {
        let tree = try Tree()
        defer { tree.cleanUp() }
        let daemon = try Daemon(config: tree.config(mode))
        #expect(try daemon.baton("run", "hangs", "--detach").code == 0)
        tree.waitForTree()
        daemon.crash()
        let again = try Daemon(config: tree.config(mode), reusing: daemon)
        defer { again.stop() }
        #expect(tree.alive(sleeping: true).count == 4, "adopted: nothing killed")
        #expect(try again.baton("run", "hangs", "--detach").code == 75, "its key is still held")
        #expect(try again.baton("cancel", "hangs").code == 0)
        _ = try again.baton("wait", "1")
        #expect(tree.alive().isEmpty, "the cancel reached the whole tree, setsid and double forks included")
        #expect(try again.baton("show", "1").stdout.contains("cancel"))
    }

    @Test("leftovers: keep ends the run with its leader and leaves its processes running", arguments: Mode.allCases)
    func keep(_ mode: Mode) throws {
        let tree = try Tree()
        defer { tree.cleanUp() }
        let daemon = try Daemon(config: tree.config(mode))
        #expect(try daemon.baton("run", "keeps").code == 0)
        let kept = Eventually.value("the kept process seen", within: 30, { tree.alive() }) { !$0.isEmpty }
        #expect(kept.count == 1)
    }
}
