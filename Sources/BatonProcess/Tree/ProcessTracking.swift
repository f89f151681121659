import BatonEngine
import BatonRuntime
/// How batond keeps track of every process a run starts, `setsid` and double forks included.
public enum ProcessTracking: Sendable, Equatable {
    /// No cgroups: the leader's process group, its descendants, and (batond being their subreaper)
    /// every orphan that carries the run's `BATON_INSTANCE` and `BATON_RUN_ID`.
    case processGroup
    /// A cgroup per attempt in batond's own subtree: stop is `cgroup.kill`, the end is `populated 0`.
    case cgroup(CgroupHierarchy)

    /// Which `limits` the kernel can enforce for the attempts: none without cgroups.
    public var limitSupport: LimitSupport {
        switch self {
        case .processGroup: .none("batond puts no run in a cgroup of its own here (processes: \(description))")
        case let .cgroup(hierarchy): hierarchy.limits
        }
    }

    /// What `batond --check-config` and `baton status` say.
    public var description: String {
        switch self {
        case .processGroup: "process group, subreaper and environment tag (no cgroup)"
        case let .cgroup(hierarchy): "a cgroup per attempt under \(hierarchy.directory); \(hierarchy.limits.summary)"
        }
    }
}
