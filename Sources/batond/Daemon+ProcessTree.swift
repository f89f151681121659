import BatonCore
import FoundationEssentials
import Glibc

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

    /// What `--check-config` adds after its process and limit lines, which describe this invocation:
    /// its caller's user and cgroup, not batond.service's. Under systemd the unit's `Delegate=yes`
    /// gives the service a cgroup of its own, and each attempt one under it. Nil where the lines
    /// already describe a service (run inside a unit) or where no run gets a cgroup anyway.
    static func invocationNote(_ setting: ProcessTreeSetting, cgroup: String?, inUnit: Bool) -> String? {
        guard !inUnit, setting != .processGroup else { return nil }
        let here = cgroup.map { "uid \(geteuid()), cgroup \($0)" } ?? "uid \(geteuid())"
        return "note: the processes and limits lines describe this invocation (\(here)), not the service: "
            + "batond.service under systemd, with its Delegate=yes, gets a cgroup of its own and puts each attempt "
            + "in a cgroup under it (see the service's own with: systemctl status batond; baton status)"
    }

    /// This process's cgroup (v2) as /proc/self/cgroup says it, such as `/user.slice/session-2.scope`.
    static func ownCgroup() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first { $0.hasPrefix("0::") }.map { String($0.dropFirst(3)) }
    }
}
