import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// The controllers `limits` need, enabled for the attempts' cgroups where batond may: cgroup v2
/// gives a child a controller only through its parent's `cgroup.subtree_control`, and a cgroup
/// (other than the root) with processes in it may enable none ("no internal processes"). So
/// batond, when its own cgroup is offered a controller it lacks in `subtree_control`, first moves
/// itself into a leaf beside its runs' subtree (`…/baton-3f2a9c1e.batond`), then enables it there
/// and in the subtree.
extension CgroupHierarchy {
    /// The controllers of the cgroup v1 hierarchies, from the text of `/proc/self/mountinfo`:
    /// controller → mount point (a hybrid host keeps memory, pids and cpu there).
    public static func v1Controllers(mountinfo: String) -> [String: String] {
        var found: [String: String] = [:]
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let dash = fields.firstIndex(of: "-"), dash + 3 < fields.count, fields[dash + 1] == "cgroup", fields.count > 4 else { continue }
            for option in fields[dash + 3].split(separator: ",") where LimitSupport.wanted.contains(String(option)) {
                found[String(option)] = unescape(String(fields[4]))
            }
        }
        return found
    }

    /// The leaf batond moves itself into to enable controllers for its runs.
    static func leaf(of directory: String) -> String { directory + ".batond" }

    /// Finds which limits can be enforced, enabling the controllers they need where batond may
    /// (with `probeOnly`, changes nothing and says what batond would find). `base` is batond's own
    /// cgroup directory, `isRoot` whether it is the hierarchy's root (exempt from the rule).
    static func limitSupport(base: String, directory: String, isRoot: Bool, probeOnly: Bool) -> LimitSupport {
        let mountinfo = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        let offered = controllers(in: base + "/cgroup.controllers")
        let enabled = controllers(in: base + "/cgroup.subtree_control")
        let need = offered.intersection(LimitSupport.wanted).subtracting(enabled)
        let obstacle = need.isEmpty ? nil : enable(need, base: base, directory: directory, isRoot: isRoot, probeOnly: probeOnly)
        let v1 = v1Controllers(mountinfo: mountinfo)
        let onV1 = LimitSupport.wanted.subtracting(offered).intersection(v1.keys)
        let (subtrees, obstacles) = v1Support(onV1, mountinfo: mountinfo, name: directory.baseName, probeOnly: probeOnly)
        var support = LimitSupport.decide(base: base, offered: offered, enabled: obstacle == nil ? enabled.union(need) : enabled,
                                          v1: v1, obstacle: obstacle, v1Subtrees: subtrees, v1Obstacles: obstacles)
        guard !probeOnly, !support.controllers.isEmpty else { return support }
        let ours = support.controllers.sorted().map { "+" + $0 }.joined(separator: " ")
        if !AttemptCgroup.write(ours, to: directory + "/cgroup.subtree_control") {
            let why = "cannot enable \(ours) in \(directory)/cgroup.subtree_control: \(String(cString: strerror(errno)))"
            for controller in support.controllers { support.missing[controller] = why }
            support.controllers = []
        }
        return support
    }

    /// Enables `need` in `base`'s subtree_control, moving batond out of `base` first; returns why
    /// it cannot, or nil.
    private static func enable(_ need: Set<String>, base: String, directory: String, isRoot: Bool, probeOnly: Bool) -> String? {
        if !isRoot {
            let others = AttemptCgroup.members(of: base).subtracting([getpid()])
            guard others.isEmpty else {
                return "batond's cgroup \(base) holds \(others.count) other process\(others.count == 1 ? "" : "es"), and cgroup v2 lets "
                    + "no cgroup with processes give controllers to its children: run batond in a cgroup of its own "
                    + "(under systemd, batond.service with Delegate=yes)"
            }
            guard !probeOnly else { return nil }
            let leaf = leaf(of: directory)
            if mkdir(leaf, 0o755) != 0 && errno != EEXIST {
                return "cannot create \(leaf) to move batond into: \(String(cString: strerror(errno)))"
            }
            guard AttemptCgroup.write(String(getpid()), to: leaf + "/cgroup.procs") else {
                return "cannot move batond into \(leaf): \(String(cString: strerror(errno)))"
            }
        }
        guard !probeOnly else { return nil }
        let text = need.sorted().map { "+" + $0 }.joined(separator: " ")
        guard AttemptCgroup.write(text, to: base + "/cgroup.subtree_control") else {
            return "cannot enable \(text) in \(base)/cgroup.subtree_control: \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// The controllers a `cgroup.controllers` or `cgroup.subtree_control` file lists.
    static func controllers(in file: String) -> Set<String> {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { return [] }
        return Set(text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))
    }
}
