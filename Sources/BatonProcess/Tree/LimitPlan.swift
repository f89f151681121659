import BatonEngine
import BatonRuntime
/// What an attempt's cgroups are given, decided from its action's `limits` and the machine's
/// `LimitSupport` before anything is created: the control files of its cgroup v2 cgroup, and the
/// groups it gets in cgroup v1 hierarchies (a hybrid host) with their files. Pure.
public struct LimitPlan: Sendable, Equatable {
    /// One value written into one control file.
    public struct Write: Sendable, Equatable, CustomStringConvertible {
        public var file: String
        public var value: String
        public init(_ file: String, _ value: String) {
            self.file = file
            self.value = value
        }
        public var description: String { "\(file)=\(value)" }
    }

    /// The attempt's group in one cgroup v1 hierarchy: `<subtree>/run-42-1`.
    public struct Group: Sendable, Equatable {
        /// batond's subtree in that hierarchy.
        public var subtree: String
        /// The controllers of that hierarchy it is made for (`memory` is also read for the peak).
        public var controllers: Set<String>
        /// In order: v1's `cpu.cfs_period_us` goes before the quota it bounds.
        public var writes: [Write]
    }

    /// Written into the attempt's cgroup v2 cgroup. A limit no hierarchy serves is planned here
    /// too, where its write fails and the attempt does not start: never silently unlimited.
    public var v2: [Write]
    /// The attempt's cgroup v1 groups, by subtree (one per hierarchy, whatever it co-mounts).
    public var v1: [Group]

    public init(v2: [Write] = [], v1: [Group] = []) {
        self.v2 = v2
        self.v1 = v1
    }

    /// The plan for `limits` where `support` holds. A memory group on v1 is made for every
    /// attempt, limited or not, for its peak (as cgroup v2's `memory.peak` is there for every one).
    public static func make(_ limits: ResourceLimits, support: LimitSupport) -> LimitPlan {
        var plan = LimitPlan()
        var groups: [String: Group] = [:]
        var order: [String] = []
        func group(_ subtree: String) {
            if groups[subtree] == nil {
                groups[subtree] = Group(subtree: subtree, controllers: [], writes: [])
                order.append(subtree)
            }
        }
        if let subtree = support.v1["memory"] {
            group(subtree)
            groups[subtree]?.controllers.insert("memory")
        }
        for field in limits.fields {
            switch support.enforcer(field) {
            case let .v1(subtree):
                group(subtree)
                groups[subtree]?.controllers.insert(field.controller)
                groups[subtree]?.writes += v1Writes(field, limits)
            case .v2, nil:
                plan.v2 += v2Writes(field, limits)
            }
        }
        plan.v1 = order.compactMap { groups[$0] }
        return plan
    }

    /// `field`'s cgroup v2 control file: `memory.max`, `pids.max`, `cpu.max` (quota and period).
    static func v2Writes(_ field: ResourceLimits.Field, _ limits: ResourceLimits) -> [Write] {
        switch field {
        case .memory: limits.memory.map { [Write("memory.max", String($0))] } ?? []
        case .tasks: limits.tasks.map { [Write("pids.max", String($0))] } ?? []
        case .cpu: limits.cpu.map { [Write("cpu.max", "\(quota($0)) \(ResourceLimits.cpuPeriod)")] } ?? []
        }
    }

    /// `field`'s cgroup v1 control files: `memory.limit_in_bytes` (swap is not limited, as with
    /// v2's `memory.max`), `pids.max`, `cpu.cfs_period_us` then `cpu.cfs_quota_us`.
    static func v1Writes(_ field: ResourceLimits.Field, _ limits: ResourceLimits) -> [Write] {
        switch field {
        case .memory: limits.memory.map { [Write("memory.limit_in_bytes", String($0))] } ?? []
        case .tasks: limits.tasks.map { [Write("pids.max", String($0))] } ?? []
        case .cpu: limits.cpu.map { [Write("cpu.cfs_period_us", String(ResourceLimits.cpuPeriod)), Write("cpu.cfs_quota_us", String(quota($0)))] } ?? []
        }
    }

    /// The CPU time per period for `percent` of one CPU, in microseconds.
    static func quota(_ percent: Int) -> Int { percent * ResourceLimits.cpuPeriod / 100 }
}
