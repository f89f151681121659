@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import Testing

/// Which hierarchy enforces which limit on a hybrid host (cgroup2 beside v1 hierarchies), and
/// what an attempt's cgroups are given: decided as values, from what the kernel's files say.
@Suite("Limit plan: cgroup v2 and v1")
struct LimitPlanTests {
    static let memory = "/sys/fs/cgroup/memory/baton-3f2a9c1e"
    static let pids = "/sys/fs/cgroup/pids/baton-3f2a9c1e"
    static let cpu = "/sys/fs/cgroup/cpu,cpuacct/baton-3f2a9c1e"
    /// This machine's shape: only hugetlb on cgroup2, the rest on v1.
    static let hybrid = LimitSupport(controllers: [], v1: ["memory": memory, "pids": pids, "cpu": cpu])
    static let pure = LimitSupport(controllers: ["memory", "pids", "cpu"])
    static let mixed = LimitSupport(controllers: ["pids"], v1: ["memory": memory], missing: ["cpu": "no cpu anywhere"])
    static let all = ResourceLimits(memory: 512 << 20, tasks: 200, cpu: 50)

    @Test("the plan: v2 files in the attempt's cgroup, v1 groups with theirs; memory's v1 group always, for the peak", arguments: [
        (pure, all, ["memory.max=536870912", "pids.max=200", "cpu.max=50000 100000"], [String]()),
        (hybrid, all, [], ["\(memory) memory: memory.limit_in_bytes=536870912", "\(pids) pids: pids.max=200",
                           "\(cpu) cpu: cpu.cfs_period_us=100000 cpu.cfs_quota_us=50000"]),
        (hybrid, ResourceLimits(), [], ["\(memory) memory: "]),
        (hybrid, ResourceLimits(cpu: 250), [], ["\(memory) memory: ", "\(cpu) cpu: cpu.cfs_period_us=100000 cpu.cfs_quota_us=250000"]),
        (mixed, ResourceLimits(memory: 1 << 30, tasks: 8), ["pids.max=8"], ["\(memory) memory: memory.limit_in_bytes=1073741824"]),
        // cpu is enforced nowhere: planned on v2, where the write fails; never silently dropped.
        (mixed, ResourceLimits(cpu: 20), ["cpu.max=20000 100000"], ["\(memory) memory: "]),
        (pure, ResourceLimits(), [], []),
    ] as [(LimitSupport, ResourceLimits, [String], [String])])
    func plan(_ support: LimitSupport, _ limits: ResourceLimits, _ v2: [String], _ v1: [String]) {
        let plan = LimitPlan.make(limits, support: support)
        #expect(plan.v2.map(\.description) == v2)
        #expect(plan.v1.map { "\($0.subtree) \($0.controllers.sorted().joined(separator: ",")): \($0.writes.map(\.description).joined(separator: " "))" } == v1)
    }

    @Test("co-mounted controllers share one v1 group")
    func coMounted() {
        let support = LimitSupport(controllers: [], v1: ["memory": Self.memory, "pids": Self.cpu, "cpu": Self.cpu])
        let plan = LimitPlan.make(Self.all, support: support)
        #expect(plan.v1.map(\.subtree) == [Self.memory, Self.cpu])
        #expect(plan.v1.last?.controllers == ["pids", "cpu"])
        #expect(plan.v1.last?.writes.map(\.file) == ["pids.max", "cpu.cfs_period_us", "cpu.cfs_quota_us"])
    }

    static let mounts = ["memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids", "cpu": "/sys/fs/cgroup/cpu,cpuacct"]

    /// (offered on v2, v1 subtrees batond may use, v1 obstacles) → (enforcer per field, refusal words).
    @Test("which hierarchy serves each limit: cgroup v2 where it is offered, else v1 where batond may make groups, else why not", arguments: [
        // Pure v2: v1 is never consulted.
        (Set(["memory", "pids", "cpu"]), [String: String](), [String: String](), ["memory": "v2", "tasks": "v2", "cpu": "v2"], [String: String]()),
        // This machine: everything on v1, batond root.
        (["hugetlb"], ["memory": memory, "pids": pids, "cpu": cpu], [:], ["memory": "v1 \(memory)", "tasks": "v1 \(pids)", "cpu": "v1 \(cpu)"], [:]),
        // A hybrid host where batond is not root: refused, saying why.
        (["hugetlb"], [:], ["memory": "batond cannot create /x: Permission denied (run batond as root)"], ["tasks": "-", "memory": "-", "cpu": "-"],
         ["memory": "cgroup v1 hierarchy (/sys/fs/cgroup/memory), where batond cannot create /x: Permission denied (run batond as root)",
          "tasks": "not on cgroup2"]),
        // pids on v2, memory on v1.
        (["pids"], ["memory": memory], [:], ["memory": "v1 \(memory)", "tasks": "v2", "cpu": "-"], ["cpu": "on a cgroup v1 hierarchy"]),
    ] as [(Set<String>, [String: String], [String: String], [String: String], [String: String])])
    func decide(offered: Set<String>, subtrees: [String: String], obstacles: [String: String], enforcers: [String: String], words: [String: String]) {
        let support = LimitSupport.decide(base: "/sys/fs/cgroup/unified", offered: offered, enabled: [], v1: Self.mounts, obstacle: nil,
                                          v1Subtrees: subtrees, v1Obstacles: obstacles)
        for field in ResourceLimits.Field.allCases {
            let shown: String = switch support.enforcer(field) {
            case .v2: "v2"
            case let .v1(subtree): "v1 \(subtree)"
            case nil: "-"
            }
            #expect(shown == enforcers[field.rawValue] ?? "-", "\(field)")
            #expect((support.refusal(field) == nil) == (shown != "-"), "\(field)")
            if let words = words[field.rawValue] { #expect(support.refusal(field)?.contains(words) == true, "\(field): \(support.refusal(field) ?? "enforced")") }
        }
    }

    @Test("--check-config and status say the hierarchy of each limit")
    func described() {
        #expect(Self.mixed.description == """
            limits this machine enforces: memory, tasks
              memory: cgroup v1 (memory hierarchy, under \(Self.memory))
              tasks: cgroup v2 (pids controller)
              cpu: no: no cpu anywhere
            """)
        #expect(Self.mixed.summary == "limits: memory by cgroup v1, tasks by cgroup v2, cpu: none")
        #expect(Self.pure.summary == "limits: memory by cgroup v2, tasks by cgroup v2, cpu by cgroup v2")
    }

    @Test("this process's v1 groups, from /proc/self/cgroup", arguments: [
        ("9:name=systemd:/\n8:pids:/\n4:memory:/process_api/44603f9c\n2:cpu,cpuacct:/a b\n0::/\n",
         ["pids": "/", "memory": "/process_api/44603f9c", "cpu": "/a b", "cpuacct": "/a b"]),
        ("0::/system.slice/batond.service\n", [:]),
        ("4:memory:/../outside\n", [:]),
        ("", [:]),
    ] as [(String, [String: String])])
    func v1Paths(_ text: String, _ expected: [String: String]) {
        #expect(CgroupHierarchy.v1Paths(cgroup: text) == expected)
    }

    @Test("batond's v1 subtrees: mount, its own group there, and its cgroup2 subtree's name")
    func v1Subtrees() {
        let paths = ["memory": "/process_api/44603f9c", "pids": "/", "cpu": "/"]
        let found = CgroupHierarchy.v1Subtrees(["memory", "pids", "cpu"], mounts: ["memory": "/m", "pids": "/p"], paths: paths, name: "baton-3f2a9c1e")
        #expect(found == ["memory": "/m/process_api/44603f9c/baton-3f2a9c1e", "pids": "/p/baton-3f2a9c1e"])
    }

    @Test("v1 memory.oom_control: the oom_kill count; none before Linux 4.13", arguments: [
        ("oom_kill_disable 0\nunder_oom 0\noom_kill 1\n", 1),
        ("oom_kill_disable 0\nunder_oom 1\noom_kill 0\n", 0),
        ("oom_kill_disable 0\nunder_oom 0\n", nil),
    ] as [(String, Int?)])
    func oomControl(_ text: String, _ expected: Int?) {
        #expect(AttemptCgroup.oomKills(memoryEvents: Array(text.utf8)) == expected)
    }
}
