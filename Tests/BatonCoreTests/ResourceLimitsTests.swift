@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import Foundation
import Testing

/// `limits`: their texts, the control files they become, which ones a machine can enforce, and
/// an OOM kill told apart from other failures.
@Suite("Resource limits")
struct ResourceLimitsTests {
    @Test("memory sizes: K, M, G, T are powers of 1024; a page at least", arguments: [
        ("512M", Int64(536_870_912)), ("512MiB", 536_870_912), ("512MB", 536_870_912), ("2G", 2_147_483_648),
        ("1.5G", 1_610_612_736), ("800k", 819_200), ("1T", 1_099_511_627_776), ("4096", 4_096), (" 64M ", 67_108_864),
        ("4095", nil), ("0", nil), ("", nil), ("M", nil), ("lots", nil), ("-1G", nil), ("1e9", nil), ("512 M", nil),
        ("12P", nil), ("9999999T", nil),
    ] as [(String, Int64?)])
    func bytes(_ text: String, _ expected: Int64?) {
        #expect(ResourceLimits.bytes(text) == expected)
    }

    @Test("CPU shares: a whole percentage of one CPU", arguments: [
        ("50%", 50), ("1%", 1), ("100%", 100), ("250%", 250), ("100000%", 100_000),
        ("0%", nil), ("50", nil), ("0.5", nil), ("12.5%", nil), ("-5%", nil), ("100001%", nil), ("%", nil),
    ] as [(String, Int?)])
    func percent(_ text: String, _ expected: Int?) {
        #expect(ResourceLimits.percent(text) == expected)
    }

    @Test("each limit becomes its control file: memory.max, pids.max, cpu.max (quota and period in µs)", arguments: [
        (ResourceLimits(memory: 536_870_912, tasks: 200, cpu: 50),
         ["memory.max=536870912", "pids.max=200", "cpu.max=50000 100000"]),
        (ResourceLimits(cpu: 250), ["cpu.max=250000 100000"]),
        (ResourceLimits(cpu: 1), ["cpu.max=1000 100000"]),
        (ResourceLimits(tasks: 1), ["pids.max=1"]),
        (ResourceLimits(), []),
    ])
    func controlFiles(_ limits: ResourceLimits, _ expected: [String]) {
        #expect(limits.controlFiles.map { "\($0.file)=\($0.value)" } == expected)
        #expect(limits.isEmpty == expected.isEmpty)
    }

    static let hybrid = """
        32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
        35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
        39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
        40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
        """

    @Test("the controllers of cgroup v1 hierarchies, from mountinfo")
    func v1Controllers() {
        #expect(CgroupHierarchy.v1Controllers(mountinfo: Self.hybrid)
                == ["cpu": "/sys/fs/cgroup/cpu", "memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids"])
        #expect(CgroupHierarchy.v1Controllers(mountinfo: CgroupHierarchyTests.pure).isEmpty)
    }

    /// (offered, enabled, on v1, obstacle) → (enforced controllers, words each refusal must hold).
    @Test("which limits a machine can enforce, and why not", arguments: [
        // Pure v2 under systemd with Delegate=yes: all offered, batond may enable them.
        (["cpu", "memory", "pids", "io"], [], [:], nil, ["cpu", "memory", "pids"], [:]),
        // Already enabled above batond: nothing to move, even with an obstacle.
        (["memory", "pids"], ["memory", "pids"], [:], "holds 3 other processes", ["memory", "pids"], ["cpu": "not delegated"]),
        // Offered, but batond shares its cgroup: the obstacle is the reason.
        (["cpu", "memory", "pids"], ["cpu"], [:], "holds 3 other processes", ["cpu"], ["memory": "holds 3 other processes", "pids": "holds 3"]),
        // This machine: a hybrid host, memory, pids and cpu on v1.
        (["hugetlb"], [], ["memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids", "cpu": "/sys/fs/cgroup/cpu"], nil, [],
         ["memory": "cgroup v1 hierarchy (/sys/fs/cgroup/memory)", "pids": "offered: hugetlb", "cpu": "/sys/fs/cgroup/cpu"]),
        // Nothing offered and nothing on v1: not delegated.
        ([], [], [:], nil, [], ["memory": "cgroup.controllers: none; under systemd: Delegate=yes"]),
    ] as [(Set<String>, Set<String>, [String: String], String?, Set<String>, [String: String])])
    func decide(offered: Set<String>, enabled: Set<String>, v1: [String: String], obstacle: String?,
                enforced: Set<String>, reasons: [String: String]) {
        let support = LimitSupport.decide(base: "/sys/fs/cgroup/x", offered: offered, enabled: enabled, v1: v1, obstacle: obstacle)
        #expect(support.controllers == enforced)
        for field in ResourceLimits.Field.allCases {
            #expect((support.refusal(field) == nil) == enforced.contains(field.controller), "\(field)")
            if let words = reasons[field.controller] {
                #expect(support.refusal(field)?.contains(words) == true, "\(field): \(support.refusal(field) ?? "enforced")")
            }
        }
    }

    @Test("an action's limits are refused one field at a time, each with its reason; without cgroups, every one")
    func refusals() {
        let partial = LimitSupport(controllers: ["pids"], missing: ["memory": "no memory here", "cpu": "no cpu here"])
        let refused = partial.refusals(ResourceLimits(memory: 1 << 30, tasks: 10, cpu: 50))
        #expect(refused.map(\.field) == [.memory, .cpu])
        #expect(refused.map(\.reason) == ["no memory here", "no cpu here"])
        #expect(partial.refusals(ResourceLimits(tasks: 10)).isEmpty)
        #expect(partial.refusals(ResourceLimits()).isEmpty)
        let none = LimitSupport.none("no cgroups")
        #expect(none.refusals(ResourceLimits(memory: 1 << 30, tasks: 10, cpu: 50)).map(\.reason) == ["no cgroups", "no cgroups", "no cgroups"])
        #expect(partial.description == "limits this machine enforces: tasks\n  memory: no: no memory here\n  tasks: cgroup v2 (pids controller)\n  cpu: no: no cpu here")
    }

    @Test("memory.events: the oom_kill count", arguments: [
        ("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n", 1),
        ("low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n", 0),
        ("oom_group_kill 2\noom_kill 3\n", 3),
        ("low 0\nhigh 0\n", nil),
        ("", nil),
    ] as [(String, Int?)])
    func oomKills(_ text: String, _ expected: Int?) {
        #expect(AttemptCgroup.oomKills(memoryEvents: Array(text.utf8)) == expected)
    }

    @Test("an attempt the kernel killed at its memory limit fails with reason oom (retrying too); without OOM kills, exit", arguments: [
        (0, Int?.none, "exit"), (0, 0, "exit"), (0, 1, "oom"), (1, 2, "oom"), (1, 0, "exit"),
    ] as [(Int, Int?, String)])
    func oomReason(retries: Int, kills: Int?, reason: String) {
        var machine = RunMachine(retries: retries)
        _ = machine.handle(.start)
        var result = AttemptResult.killed(signal: 9)
        result.oomKills = kills
        let effects = machine.handle(.exited(result))
        guard case let .record(phase, detail) = effects.first else { Issue.record("nothing recorded"); return }
        #expect(phase == (retries > 0 ? .retrying : .failure))
        #expect((detail.reason ?? "exit") == reason)
    }

    @Test("on this machine, for real: what the probe finds matches cgroup.controllers and the v1 mounts, and a cgroup given a limit it cannot enforce is not made")
    func thisMachine() throws {
        guard case let .success(hierarchy) = CgroupHierarchy.prepare(instance: "limits-test-\(UUID().uuidString)", probeOnly: true) else { return }
        let offered = CgroupHierarchy.controllers(in: hierarchy.home + "/cgroup.controllers")
        #expect(hierarchy.limits.controllers.isSubset(of: offered.intersection(LimitSupport.wanted)), "\(hierarchy.limits)")
        // Not on cgroup2: served by a v1 hierarchy of that controller (a hybrid host), else refused.
        let mounts = CgroupHierarchy.v1Controllers(mountinfo: try String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8))
        for field in ResourceLimits.Field.allCases where !offered.contains(field.controller) {
            if case let .v1(subtree) = hierarchy.limits.enforcer(field) {
                #expect(subtree.hasPrefix((mounts[field.controller] ?? "?") + "/"), "\(field): \(subtree)")
                #expect(access(subtree, F_OK) != 0, "a probe leaves no subtree behind")
            } else {
                #expect(hierarchy.limits.refusal(field) != nil, "\(field)")
            }
        }
        // An attempt's cgroup given limits its controllers cannot enforce: refused, and removed.
        let refused = ResourceLimits.Field.allCases.filter { hierarchy.limits.refusal($0) != nil }
        guard let field = refused.first else { return }
        #expect(mkdir(hierarchy.directory, 0o755) == 0)
        defer { rmdir(hierarchy.directory) }
        var limits = ResourceLimits()
        switch field {
        case .memory: limits.memory = 1 << 30
        case .tasks: limits.tasks = 10
        case .cpu: limits.cpu = 50
        }
        let path = hierarchy.path(run: 1, attempt: 1)
        guard case let .failure(why) = AttemptCgroup.create(path, home: hierarchy.home, plan: LimitPlan.make(limits, support: hierarchy.limits)) else {
            Issue.record("\(field) was written where \(hierarchy.limits.refusal(field) ?? "") said it could not be")
            AttemptCgroup.destroy(path)
            return
        }
        #expect(why.description.contains(limits.controlFiles[0].file), "\(why)")
        #expect(access(path, F_OK) != 0, "the refused cgroup is removed")
    }

    @Test("an OOM kill in a run that succeeded anyway does not make it fail")
    func oomButSucceeded() {
        var machine = RunMachine(retries: 0)
        _ = machine.handle(.start)
        var result = AttemptResult.exited(status: 0)
        result.oomKills = 1
        guard case let .record(phase, detail) = machine.handle(.exited(result)).first else { Issue.record("nothing recorded"); return }
        #expect(phase == .success && detail.reason == "exit")
    }
}
