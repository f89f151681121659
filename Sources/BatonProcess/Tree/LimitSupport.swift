import BatonEngine
import BatonRuntime
/// Which `limits` the kernel can enforce for this batond's attempts, and by which hierarchy: the
/// cgroup v2 controllers enabled for their cgroups, else a cgroup v1 hierarchy holding the
/// controller where batond may make a group per attempt (a hybrid host), and why each other one
/// is neither. Decided once, when batond prepares its cgroups; a config is checked against it at
/// load and at every reload.
public struct LimitSupport: Sendable, Equatable {
    /// The controllers enabled in the attempts' cgroup v2 cgroups (`memory`, `pids`, `cpu`).
    public var controllers: Set<String>
    /// The controllers served by a cgroup v1 hierarchy instead: controller → batond's subtree
    /// there (`/sys/fs/cgroup/memory/baton-3f2a9c1e`), where each attempt gets a group too.
    public var v1: [String: String]
    /// Why a controller is served by neither, by controller.
    public var missing: [String: String]

    public init(controllers: Set<String>, v1: [String: String] = [:], missing: [String: String] = [:]) {
        self.controllers = controllers
        self.v1 = v1
        self.missing = missing
    }

    /// No limit at all: `reason` says why (no cgroup per attempt here).
    public static func none(_ reason: String) -> LimitSupport {
        LimitSupport(controllers: [], missing: Dictionary(uniqueKeysWithValues: ResourceLimits.Field.allCases.map { ($0.controller, reason) }))
    }

    /// The controllers limits use.
    public static let wanted: Set<String> = Set(ResourceLimits.Field.allCases.map(\.controller))

    /// Which hierarchy enforces a limit.
    public enum Enforcer: Sendable, Equatable {
        /// The attempt's cgroup on cgroup2.
        case v2
        /// The attempt's group under this subtree of a cgroup v1 hierarchy.
        case v1(subtree: String)
    }

    /// Who enforces `field` here; nil when nobody can (`refusal` says why).
    public func enforcer(_ field: ResourceLimits.Field) -> Enforcer? {
        if controllers.contains(field.controller) { return .v2 }
        return v1[field.controller].map { .v1(subtree: $0) }
    }

    /// Why `field` cannot be enforced here; nil when it can.
    public func refusal(_ field: ResourceLimits.Field) -> String? {
        guard enforcer(field) == nil else { return nil }
        return missing[field.controller] ?? "the \(field.controller) controller is not enabled for batond's cgroups"
    }

    /// Each limit of `limits` that cannot be enforced here, with why.
    public func refusals(_ limits: ResourceLimits) -> [(field: ResourceLimits.Field, reason: String)] {
        limits.fields.compactMap { field in refusal(field).map { (field, $0) } }
    }

    /// One line for `baton status`: `limits: memory by cgroup v1, tasks by cgroup v2, cpu: none`.
    public var summary: String {
        "limits: " + ResourceLimits.Field.allCases.map { field in
            switch enforcer(field) {
            case .v2: "\(field.rawValue) by cgroup v2"
            case .v1: "\(field.rawValue) by cgroup v1"
            case nil: "\(field.rawValue): none"
            }
        }.joined(separator: ", ")
    }

    /// What `--check-config` says: the limits it enforces, then each one with its hierarchy, or
    /// why it cannot be had.
    public var description: String {
        let fields = ResourceLimits.Field.allCases
        let enforced = fields.filter { refusal($0) == nil }.map(\.rawValue)
        var lines = ["limits this machine enforces: " + (enforced.isEmpty ? "none" : enforced.joined(separator: ", "))]
        for field in fields {
            switch enforcer(field) {
            case .v2: lines.append("  \(field.rawValue): cgroup v2 (\(field.controller) controller)")
            case let .v1(subtree): lines.append("  \(field.rawValue): cgroup v1 (\(field.controller) hierarchy, under \(subtree))")
            case nil: lines.append("  \(field.rawValue): no: \(refusal(field) ?? "")")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// The support, from what batond found: the controllers its own cgroup is offered (its
    /// `cgroup.controllers`), those already enabled in its `subtree_control`, where the cgroup v1
    /// hierarchies hold controllers (controller → mount point), why it cannot enable more (nil:
    /// it can), and for the controllers on v1, batond's subtree there (`v1Subtrees`, where it may
    /// make groups) or why it may not (`v1Obstacles`). cgroup v2 is preferred where it serves.
    /// Pure: the files are read, and the controllers enabled, by `CgroupHierarchy`.
    public static func decide(base: String, offered: Set<String>, enabled: Set<String>, v1: [String: String],
                              obstacle: String?, v1Subtrees: [String: String] = [:], v1Obstacles: [String: String] = [:]) -> LimitSupport {
        var support = LimitSupport(controllers: [])
        for controller in wanted.sorted() {
            if offered.contains(controller) && (enabled.contains(controller) || obstacle == nil) {
                support.controllers.insert(controller)
            } else if let subtree = v1Subtrees[controller], v1[controller] != nil {
                support.v1[controller] = subtree
            } else if !offered.contains(controller) {
                let listed = offered.isEmpty ? "none" : offered.sorted().joined(separator: " ")
                support.missing[controller] = v1[controller].map { mount in
                    v1Obstacles[controller].map { "the \(controller) controller is on a cgroup v1 hierarchy (\(mount)), where \($0)" }
                        ?? "the \(controller) controller is on a cgroup v1 hierarchy (\(mount)), not on cgroup2, where batond's cgroup \(base) is offered: \(listed)"
                } ?? "the \(controller) controller is not delegated to batond's cgroup \(base) (its cgroup.controllers: \(listed); under systemd: Delegate=yes)"
            } else {
                support.missing[controller] = obstacle
            }
        }
        return support
    }
}
