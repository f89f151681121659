/// Which `limits` the kernel can enforce for this batond's attempts: the cgroup v2 controllers
/// enabled for their cgroups, and why each other one is not. Decided once, when batond prepares
/// its cgroups; a config is checked against it at load and at every reload.
public struct LimitSupport: Sendable, Equatable {
    /// The controllers enabled in the attempts' cgroups (`memory`, `pids`, `cpu`).
    public var controllers: Set<String>
    /// Why a controller is not enabled, by controller.
    public var missing: [String: String]

    public init(controllers: Set<String>, missing: [String: String] = [:]) {
        self.controllers = controllers
        self.missing = missing
    }

    /// No limit at all: `reason` says why (no cgroup per attempt here).
    public static func none(_ reason: String) -> LimitSupport {
        LimitSupport(controllers: [], missing: Dictionary(uniqueKeysWithValues: ResourceLimits.Field.allCases.map { ($0.controller, reason) }))
    }

    /// The controllers limits use.
    public static let wanted: Set<String> = Set(ResourceLimits.Field.allCases.map(\.controller))

    /// Why `field` cannot be enforced here; nil when it can.
    public func refusal(_ field: ResourceLimits.Field) -> String? {
        guard !controllers.contains(field.controller) else { return nil }
        return missing[field.controller] ?? "the \(field.controller) controller is not enabled for batond's cgroups"
    }

    /// Each limit of `limits` that cannot be enforced here, with why.
    public func refusals(_ limits: ResourceLimits) -> [(field: ResourceLimits.Field, reason: String)] {
        limits.fields.compactMap { field in refusal(field).map { (field, $0) } }
    }

    /// What `--check-config` says: `limits: memory, tasks, cpu` or each one that cannot be had, and why.
    public var description: String {
        let fields = ResourceLimits.Field.allCases
        let enforced = fields.filter { refusal($0) == nil }.map(\.rawValue)
        var lines = ["limits this machine enforces: " + (enforced.isEmpty ? "none" : enforced.joined(separator: ", "))]
        for field in fields {
            if let reason = refusal(field) { lines.append("  \(field.rawValue): no: \(reason)") }
        }
        return lines.joined(separator: "\n")
    }

    /// The support, from what batond found: the controllers its own cgroup is offered (its
    /// `cgroup.controllers`), those already enabled in its `subtree_control`, where the cgroup v1
    /// hierarchies hold controllers (controller → mount point), and why it cannot enable more
    /// (nil: it can). Pure: the files are read, and the controllers enabled, by `CgroupHierarchy`.
    public static func decide(base: String, offered: Set<String>, enabled: Set<String>, v1: [String: String],
                              obstacle: String?) -> LimitSupport {
        var support = LimitSupport(controllers: [])
        for controller in wanted.sorted() {
            if !offered.contains(controller) {
                let listed = offered.isEmpty ? "none" : offered.sorted().joined(separator: " ")
                support.missing[controller] = v1[controller].map {
                    "the \(controller) controller is on a cgroup v1 hierarchy (\($0)), not on cgroup2, where batond's cgroup \(base) is offered: \(listed)"
                } ?? "the \(controller) controller is not delegated to batond's cgroup \(base) (its cgroup.controllers: \(listed); under systemd: Delegate=yes)"
            } else if !enabled.contains(controller), let obstacle {
                support.missing[controller] = obstacle
            } else {
                support.controllers.insert(controller)
            }
        }
        return support
    }
}
