import BatonCore
import FoundationEssentials

/// `processTree` in the config: how batond keeps track of each run's processes.
enum ProcessTreeSetting: String, Sendable, CaseIterable {
    /// A cgroup per attempt where batond can make one (root with a writable cgroup2 mount, or
    /// systemd with `Delegate=yes`), else the process group, subreaper and tag.
    case auto
    /// A cgroup per attempt, or batond does not start.
    case cgroup
    /// Never cgroups.
    case processGroup
}

extension Daemon {
    /// The tracking for this batond's runs by the config's setting, with what to log: why
    /// there are no cgroups, when `auto` found none. Throws when `cgroup` was asked and cannot be had.
    static func processTracking(_ setting: ProcessTreeSetting, instance: String) throws -> (ProcessTracking, note: String?) {
        guard setting != .processGroup else { return (.processGroup, nil) }
        switch CgroupHierarchy.prepare(instance: instance) {
        case let .success(hierarchy):
            return (.cgroup(hierarchy), nil)
        case let .failure(why) where setting == .auto:
            return (.processGroup, "no cgroup per run (\(why)): a run's processes are its process group and, batond being their subreaper, every orphan that carries its BATON_RUN_ID")
        case let .failure(why):
            throw DaemonError("processTree is \"cgroup\", but \(why)")
        }
    }

    /// What `--check-config` says of the process tree on this machine, and which limits it could
    /// enforce (nothing is left created or moved).
    static func describeTracking(_ config: Config, instance: String) -> (String, LimitSupport) {
        guard config.processTree != .processGroup else {
            return ("processes: \(ProcessTracking.processGroup.description) (processTree: \"processGroup\")",
                    ProcessTracking.processGroup.limitSupport)
        }
        switch CgroupHierarchy.prepare(instance: instance, probeOnly: true) {
        case let .success(hierarchy):
            return ("processes: \(ProcessTracking.cgroup(hierarchy).description)", hierarchy.limits)
        case let .failure(why) where config.processTree == .cgroup:
            return ("processes: processTree is \"cgroup\", but \(why): batond would not start", .none("batond would not start"))
        case let .failure(why):
            return ("processes: \(ProcessTracking.processGroup.description): \(why)", .none("batond puts no run in a cgroup of its own here (\(why))"))
        }
    }
}
