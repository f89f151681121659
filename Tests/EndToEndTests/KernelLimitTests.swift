import BatonCore
import Foundation
import Testing

/// `limits` enforced by the kernel, for real, with batond as root and a cgroup per attempt:
/// memory (an OOM kill is the failure's reason), tasks (forks beyond it fail), cpu (the CPU
/// time a busy loop gets), the attempt's peak memory, and the attempt's cgroups in every
/// hierarchy gone after its end and after `kill -9` of batond and a restart. On a pure cgroup v2
/// host the controllers are on cgroup2; on a hybrid one (this machine) on cgroup v1 hierarchies.
@Suite("End to end: limits the kernel enforces", .serialized, .offPool)
struct KernelLimitTests {
    /// Whether `controller` is on some hierarchy here and batond (this process's user) may
    /// create cgroups: root, with a cgroup2 mount (the tree is tracked there).
    static func available(_ controller: String) -> Bool {
        guard getuid() == 0, let mountinfo = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8),
              let v2 = CgroupHierarchy.mountPoint(mountinfo: mountinfo) else { return false }
        let offered = (try? String(contentsOfFile: v2 + "/cgroup.controllers", encoding: .utf8)) ?? ""
        return offered.split(whereSeparator: \.isWhitespace).contains(Substring(controller))
            || v1Mounts(mountinfo)[controller] != nil
    }

    /// controller → mount point of the cgroup v1 hierarchies (read here, independently of batond).
    static func v1Mounts(_ mountinfo: String) -> [String: String] {
        var found: [String: String] = [:]
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash + 3 < fields.count, fields[dash + 1] == "cgroup" else { continue }
            for option in fields[dash + 3].split(separator: ",") { found[String(option)] = String(fields[4]) }
        }
        return found
    }

    static func config(_ actions: String) -> String {
        #"{ processTree: "cgroup", shutdownGrace: "100ms", actions: { \#(actions) } }"#
    }

    static func python(_ script: String, _ arguments: String...) -> String {
        "[\"/usr/bin/python3\", \"-c\", \(String(reflecting: script))" + arguments.map { ", \(String(reflecting: $0))" }.joined() + "]"
    }

    static func lastDetail(_ daemon: Daemon, run: Int64) throws -> TransitionDetail? {
        try ProcessTreeTests.detail(daemon, run: run)
    }

    @Test("memory: 32M, and an action that touches 200 MiB: the kernel kills it, and the failure's reason is oom")
    func outOfMemory() throws {
        guard Self.available("memory") else { return }
        let daemon = try Daemon(config: Self.config("""
            hog: { exec: \(Self.python("block = b'x' * (200 << 20)\nprint(len(block))")), limits: { memory: "32M" } }
            """))
        let run = try daemon.baton("run", "hog")
        #expect(run.code != 0, "\(run)")
        let detail = try #require(try Self.lastDetail(daemon, run: 1))
        #expect(detail.reason == "oom", "\(detail)")
        #expect(detail.error?.contains("out of memory") == true, "\(detail)")
        // The group's charge stays at the limit; the leader's resident set (shared libraries
        // counted in full) may show a little more. Far from the 200 MiB it asked for, either way.
        #expect((detail.memoryPeak ?? 0) < 64 << 20, "\(detail)")
    }

    @Test("tasks: 8, and a process that forks 30 sleeps: the forks beyond the limit fail")
    func tasks() throws {
        guard Self.available("pids") else { return }
        let directory = NSTemporaryDirectory() + "baton-tasks-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = """
            import os, sys
            ran = failed = 0
            for _ in range(30):
                try:
                    pid = os.fork()
                except OSError:
                    failed += 1
                    continue
                if pid == 0:
                    os.execv('/bin/sleep', ['sleep', '30'])
                ran += 1
            open(sys.argv[1], 'w').write(f'{ran} {failed}')
            """
        let daemon = try Daemon(config: Self.config("forks: { exec: \(Self.python(script, directory + "/count")), limits: { tasks: 8 }, killGrace: \"200ms\" }"))
        let run = try daemon.baton("run", "forks")
        #expect(run.code == 0, "\(run)")
        let counts = try String(contentsOfFile: directory + "/count", encoding: .utf8).split(separator: " ").compactMap { Int($0) }
        #expect(counts.count == 2)
        let (ran, failed) = (counts.first ?? 0, counts.last ?? 0)
        // Eight tasks: the shim (it counts: it is in the attempt's cgroup), python itself and six children.
        #expect(ran == 6 && failed == 24, "ran \(ran), failed \(failed)")
        #expect(try Self.lastDetail(daemon, run: 1)?.leftovers == ran, "the sleeps that ran were the run's, and were stopped")
    }

    @Test("cpu: 20%, and a loop that needs 0.45 s of CPU: it takes five times that in wall time, a fifth of a CPU")
    func cpu() throws {
        guard Self.available("cpu") else { return }
        // The loop ends after a fixed amount of CPU, not of wall time: load on the machine can only
        // stretch its wall time, so the bound below holds under any load and fails without the
        // limit on an idle machine (0.45 s of wall for 0.45 s of CPU).
        let busy = "import time\nwhile time.process_time() < 0.45: pass"
        let daemon = try Daemon(config: Self.config("limited: { exec: \(Self.python(busy)), limits: { cpu: \"20%\" } },"))
        let result = try daemon.baton("run", "limited")
        #expect(result.code == 0, "\(result)")
        let shown = try JSONDecoder().decode(RunDetail.self, from: Data(try daemon.baton("show", "1", "--json").stdout.utf8))
        let start = try #require(shown.transitions.first { $0.to == .loading }?.at)
        let end = try #require(shown.transitions.last?.at)
        let cpu = Double((shown.run.cpuUser ?? 0) + (shown.run.cpuSystem ?? 0)) / 1e6
        let wall = Double(end.rawValue - start.rawValue) / 1e6
        // The quota is 20 ms per 100 ms period: 0.45 s of CPU (python's start-up adds a little)
        // needs at least 22 periods; a period's burst of slack each side allows 1.6 s.
        #expect(cpu >= 0.45, "cpu \(cpu), wall \(wall)")
        #expect(wall >= 1.6, "cpu \(cpu) in wall \(wall): more than a fifth of a CPU")
        #expect(cpu < 0.2 * wall + 0.15, "cpu \(cpu), wall \(wall)")
    }

    @Test("peak memory is the attempt's cgroup's: two processes holding 60 MiB each at once peak at 120 MiB or more")
    func peak() throws {
        guard Self.available("memory") else { return }
        let directory = NSTemporaryDirectory() + "baton-peak-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Each holds its 60 MiB until both do (a file each says so), so the two are held together.
        let hold = """
            import os, sys, time
            block = b'x' * (60 << 20)
            open(sys.argv[1] + '/' + sys.argv[2], 'w').close()
            deadline = time.monotonic() + 30
            while len(os.listdir(sys.argv[1])) < 2 and time.monotonic() < deadline: time.sleep(0.005)
            """
        let both = "\(String(reflecting: hold).dropFirst().dropLast())"
        let daemon = try Daemon(config: Self.config("""
            pair: { exec: ["sh", "-c", "python3 -c \\"$HOLD\\" \(directory) a & python3 -c \\"$HOLD\\" \(directory) b & wait"],
                    env: { HOLD: "\(both)" } }
            """))
        let run = try daemon.baton("run", "pair")
        #expect(run.code == 0, "\(run)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).sorted() == ["a", "b"])
        let peak = try #require(try Self.lastDetail(daemon, run: 1)?.memoryPeak)
        // (134 MiB measured here: the two blocks and two interpreters.)
        #expect(peak >= 120 << 20 && peak < 200 << 20, "peak \(peak)")
    }

    /// The directories named `run-*` in this daemon's subtrees of the cgroup v1 hierarchies.
    static func v1Groups(of daemon: Daemon) -> [String] {
        let mountinfo = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        let subtree = CgroupHierarchy.subtreeName(instance: daemon.database)
        var found: [String] = []
        for mount in Set(["memory", "pids", "cpu"].compactMap { v1Mounts(mountinfo)[$0] }) {
            guard let walk = FileManager.default.enumerator(atPath: mount) else { continue }
            while let path = walk.nextObject() as? String {
                let name = (path as NSString).lastPathComponent
                if !name.hasPrefix("baton-") && !name.hasPrefix("run-") && name.contains(".") { walk.skipDescendants() }
                if name.hasPrefix("run-") && (path as NSString).deletingLastPathComponent.hasSuffix(subtree) {
                    found.append(mount + "/" + path)
                }
            }
        }
        return found.sorted()
    }

    /// The pids a group lists.
    static func members(_ group: String) -> Set<Int32> {
        Set(((try? String(contentsOfFile: group + "/cgroup.procs", encoding: .utf8)) ?? "").split(separator: "\n").compactMap { Int32($0) })
    }

    /// `survivesRestart: false`: the leader is the action's own process, and recovery kills it as it always did.
    @Test("the attempt's cgroup v1 groups hold its leader, and are gone after its end, and after kill -9 of batond and a restart")
    func v1GroupsRemoved() throws {
        let mountinfo = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        let v1 = Self.v1Mounts(mountinfo)
        guard getuid() == 0, CgroupHierarchy.mountPoint(mountinfo: mountinfo) != nil,
              let memory = v1["memory"], let pids = v1["pids"], let cpu = v1["cpu"] else { return }
        let gate = try FifoGate()
        let config = Self.config("""
            held: { exec: ["sh", "-c", "exec cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" },
                    limits: { memory: "256M", tasks: 50, cpu: "100%" }, survivesRestart: false }
            """)
        let daemon = try Daemon(config: config)
        // Waits (bounded) until the run's groups are there with its processes in them.
        func groupsOfRun(_ run: Int) -> [String] {
            Eventually.value("run \(run)'s three v1 groups, each with its processes", within: 30, {
                Self.v1Groups(of: daemon).filter { $0.hasSuffix("/run-\(run)-1") }
            }) { $0.count == 3 && $0.allSatisfy { !Self.members($0).isEmpty } }
        }
        #expect(try daemon.baton("run", "held", "--detach").code == 0)
        let groups = groupsOfRun(1)
        #expect(groups.count == 3 && [memory, pids, cpu].allSatisfy { mount in groups.contains { $0.hasPrefix(mount + "/") } }, "\(groups)")
        for group in groups {
            #expect(Self.members(group).count == 1, "the leader is in \(group)")
        }
        let limit = try String(contentsOfFile: try #require(groups.first { $0.hasPrefix(memory + "/") }) + "/memory.limit_in_bytes", encoding: .utf8)
        #expect(limit.trimmingCharacters(in: .whitespacesAndNewlines) == String(256 << 20))
        let quota = try String(contentsOfFile: try #require(groups.first { $0.hasPrefix(cpu + "/") }) + "/cpu.cfs_quota_us", encoding: .utf8)
        #expect(quota.trimmingCharacters(in: .whitespacesAndNewlines) == "100000")
        gate.release()
        #expect(try daemon.baton("wait", "1").code == 0)
        #expect(Self.v1Groups(of: daemon).isEmpty, "gone with the attempt")

        #expect(try daemon.baton("run", "held", "--detach").code == 0)
        let crashed = groupsOfRun(2)
        #expect(crashed.count == 3, "\(crashed)")
        daemon.crash()
        #expect(Self.v1Groups(of: daemon) == crashed, "a crash leaves them")
        // The leader (the shell exec'd its cat), in every group.
        let listed = crashed.map(Self.members)
        #expect(Set(listed).count == 1 && listed.first?.count == 1, "\(listed)")
        let members = listed.first ?? []
        let again = try Daemon(config: config, reusing: daemon)
        #expect(Self.v1Groups(of: daemon).isEmpty, "removed by recovery before batond is ready")
        for pid in members { #expect(kill(pid, 0) != 0 || (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8))?.contains(") Z ") == true) }
        #expect(try again.baton("show", "2").stdout.contains("interrupted"))
        again.stop()
        let subtree = CgroupHierarchy.subtreeName(instance: daemon.database)
        for mount in [memory, pids, cpu] {
            let left = FileManager.default.enumerator(atPath: mount)?.compactMap { $0 as? String }.filter { $0.hasSuffix("/" + subtree) || $0 == subtree } ?? []
            #expect(left.isEmpty, "batond's v1 subtrees go with it: \(left)")
        }
    }

    @Test("leftovers: keep: a kept process leaves the attempt's v1 groups for batond's own, and the groups go")
    func keptLeavesGroups() throws {
        let mountinfo = try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)
        guard getuid() == 0, CgroupHierarchy.mountPoint(mountinfo: mountinfo) != nil,
              ["memory", "pids", "cpu"].allSatisfy({ Self.v1Mounts(mountinfo)[$0] != nil }) else { return }
        let mark = String(format: "%06d", Int.random(in: 1...999_999))
        let daemon = try Daemon(config: Self.config("""
            keeps: { exec: ["sh", "-c", "setsid sleep 3606.\(mark) &"], leftovers: "keep", limits: { memory: "64M", tasks: 10, cpu: "50%" } }
            """))
        #expect(try daemon.baton("run", "keeps").code == 0)
        // The run ends when `sh` exits, which may be before its background child has exec'd
        // `setsid` and then `sleep` (a CI run found it still between the two): wait for the exec.
        let kept = Eventually.value("the kept child exec'd sleep 3606.\(mark)", {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { Int32($0) }.filter { pid in
                let line = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline").map { String(decoding: $0, as: UTF8.self) } ?? ""
                return line.hasPrefix("sleep\u{0}3606.\(mark)")
            }
        }) { !$0.isEmpty }
        defer { for pid in kept { kill(pid, SIGKILL) } }
        #expect(kept.count == 1, "\(kept)")
        #expect(Self.v1Groups(of: daemon).isEmpty, "the attempt's groups are gone")
        // Where it is now, in each hierarchy: batond's own group (the parent of its subtree).
        let subtree = CgroupHierarchy.subtreeName(instance: daemon.database)
        let groups = (try? String(contentsOfFile: "/proc/\(kept.first ?? 0)/cgroup", encoding: .utf8)) ?? ""
        for line in groups.split(separator: "\n") where ["memory", "pids", "cpu"].contains(where: { line.contains(":\($0):") || line.contains(",\($0):") }) {
            #expect(!line.contains(subtree), "kept out of the run's groups: \(line)")
        }
    }

    @Test("--check-config and status say which hierarchy enforces each limit")
    func shown() throws {
        guard Self.available("memory"), Self.available("pids"), Self.available("cpu") else { return }
        let daemon = try Daemon(config: Self.config(#"big: { exec: ["true"], limits: { memory: "512M", tasks: 200, cpu: "50%" } }"#))
        let check = try execute(Binaries.batond, ["--check-config", daemon.configPath])
        #expect(check.code == 0, "\(check)")
        #expect(check.stdout.contains("limits this machine enforces: memory, tasks, cpu"), "\(check)")
        for field in ["memory", "tasks", "cpu"] {
            #expect(check.stdout.contains("  \(field): cgroup v"), "\(field): \(check)")
        }
        let status = try daemon.baton("status").stdout
        #expect(status.contains("limits: memory by cgroup v"), "\(status)")
        #expect(try daemon.baton("run", "big").code == 0)
    }
}
