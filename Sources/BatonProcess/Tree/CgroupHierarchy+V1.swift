import BatonEngine
import BatonRuntime
import FoundationEssentials
import Glibc

/// The cgroup v1 side of a hybrid host (cgroup2 mounted beside v1 hierarchies that hold memory,
/// pids or cpu): where batond's cgroup tree is tracked on cgroup2 but a limit's controller is only
/// on v1, batond keeps a subtree in that v1 hierarchy too, named as its cgroup2 subtree and under
/// its own v1 group there, and gives each attempt a group in it.
extension CgroupHierarchy {
    /// This process's cgroup v1 path in each hierarchy, by controller, from the text of
    /// `/proc/self/cgroup` (`4:memory:/x`, `3:cpu,cpuacct:/`; named and v2 lines are skipped).
    public static func v1Paths(cgroup: String) -> [String: String] {
        var found: [String: String] = [:]
        for line in cgroup.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, !parts[1].isEmpty, parts[2].hasPrefix("/"), !parts[2].hasPrefix("/..") else { continue }
            for controller in parts[1].split(separator: ",") where !controller.hasPrefix("name=") {
                found[String(controller)] = String(parts[2])
            }
        }
        return found
    }

    /// batond's subtree in the v1 hierarchy of each of `controllers` it has both a mount point
    /// (`mounts`, from `v1Controllers`) and a path (`paths`, from `v1Paths`) for: the mount, its
    /// own group there, and `name` (its cgroup2 subtree's).
    public static func v1Subtrees(_ controllers: Set<String>, mounts: [String: String], paths: [String: String], name: String) -> [String: String] {
        var found: [String: String] = [:]
        for controller in controllers {
            guard let mount = mounts[controller], let path = paths[controller] else { continue }
            found[controller] = mount + (path == "/" ? "" : path) + "/" + name
        }
        return found
    }

    /// For the controllers `need` (on v1, not on cgroup2), the subtrees batond may make attempts'
    /// groups in (made here unless `probeOnly`, which leaves nothing behind), and why not where it may not.
    static func v1Support(_ need: Set<String>, mountinfo: String, name: String, probeOnly: Bool)
        -> (subtrees: [String: String], obstacles: [String: String]) {
        guard !need.isEmpty else { return ([:], [:]) }
        let cgroup = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)) ?? ""
        let wanted = v1Subtrees(need, mounts: v1Controllers(mountinfo: mountinfo), paths: v1Paths(cgroup: cgroup), name: name)
        var subtrees: [String: String] = [:], obstacles: [String: String] = [:]
        var checked: [String: String?] = [:]
        for (controller, subtree) in wanted {
            if checked[subtree] == nil { checked[subtree] = .some(v1Obstacle(subtree, probeOnly: probeOnly)) }
            if let obstacle = checked[subtree] ?? nil { obstacles[controller] = obstacle } else { subtrees[controller] = subtree }
        }
        for controller in need where wanted[controller] == nil {
            obstacles[controller] = "batond's own group in it is unknown (/proc/self/cgroup)"
        }
        return (subtrees, obstacles)
    }

    /// Why batond cannot make groups in the v1 subtree `subtree` (made unless `probeOnly`); nil: it can.
    private static func v1Obstacle(_ subtree: String, probeOnly: Bool) -> String? {
        let parent = subtree.parentPath
        // A probe beside the subtree (where it is not there yet) is named as cgroup2's probe is.
        let probe = probeOnly && access(subtree, F_OK) != 0 ? parent + "/baton-probe-\(getpid())" : subtree + "/probe-\(getpid())"
        if !probeOnly && mkdir(subtree, 0o755) != 0 && errno != EEXIST {
            return "batond cannot create \(subtree): \(String(cString: strerror(errno)))" + (errno == EACCES || errno == EROFS || errno == EPERM ? " (run batond as root)" : "")
        }
        guard mkdir(probe, 0o755) == 0 else {
            return "batond cannot create groups in \(probe.parentPath): \(String(cString: strerror(errno)))"
        }
        let writable = access(probe + "/cgroup.procs", W_OK) == 0
        rmdir(probe)
        return writable ? nil : "batond may not move processes into \(probe.parentPath)'s groups"
    }

    /// batond's v1 subtrees (one per hierarchy, whatever it co-mounts).
    public var v1Directories: Set<String> { Set(limits.v1.values) }
}
