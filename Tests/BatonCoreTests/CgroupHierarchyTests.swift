@testable import BatonProcess
@testable import BatonCore
@testable import BatonEngine
import Foundation
import Testing

/// Finding the cgroup v2 hierarchy from what the kernel says, never assuming a path.
@Suite("Cgroup hierarchy")
struct CgroupHierarchyTests {
    static let hybrid = """
        31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
        32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
        35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
        41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
        """
    static let pure = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot"

    @Test("the cgroup2 mount point, from mountinfo", arguments: [
        (hybrid, "/sys/fs/cgroup/unified"),
        (pure, "/sys/fs/cgroup"),
        ("22 1 0:5 / /proc rw - proc proc rw", nil),
        ("41 31 0:38 /some/sub /mnt/cg rw - cgroup2 cgroup2 rw", nil),
        ("41 31 0:38 / /mnt/with\\040space rw - cgroup2 cgroup2 rw", "/mnt/with space"),
        ("", nil),
    ] as [(String, String?)])
    func mountPoint(_ mountinfo: String, _ expected: String?) {
        #expect(CgroupHierarchy.mountPoint(mountinfo: mountinfo) == expected)
    }

    @Test("this process's own cgroup v2 path, from /proc/self/cgroup", arguments: [
        ("9:name=systemd:/\n4:memory:/x\n0::/\n", "/"),
        ("0::/system.slice/batond.service\n", "/system.slice/batond.service"),
        ("12:pids:/a\n", nil),
        ("0::/../outside\n", nil),
    ] as [(String, String?)])
    func ownPath(_ text: String, _ expected: String?) {
        #expect(CgroupHierarchy.ownPath(cgroup: text) == expected)
    }

    @Test("each instance has its own stable subtree name")
    func subtreeNames() {
        let a = CgroupHierarchy.subtreeName(instance: "/var/lib/baton/history.sqlite")
        #expect(a == CgroupHierarchy.subtreeName(instance: "/var/lib/baton/history.sqlite"))
        #expect(a != CgroupHierarchy.subtreeName(instance: "/tmp/other.sqlite"))
        #expect(a.hasPrefix("baton-") && a.count == 14)
        #expect(CgroupHierarchy(directory: "/sys/fs/cgroup/x").path(run: 42, attempt: 1) == "/sys/fs/cgroup/x/run-42-1")
    }

    @Test("a process's start time (field 22 of /proc/PID/stat) read in C, as the text says")
    func startTime() throws {
        let stat = try String(contentsOfFile: "/proc/self/stat", encoding: .utf8)
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        #expect(ProcessGroup.startTime(of: getpid()) == UInt64(fields[19]))
        #expect(ProcessGroup.startTime(of: Int32.max) == nil)
    }

    @Test("a /proc/PID/stat line: state, parent and group, whatever the command's name holds")
    func procStat() {
        let stat = ProcStat(stat: "4242 (my (odd) name) S 1 4240 4240 0 -1 4194560 100 0 0 0")
        #expect(stat?.state == "S" && stat?.parent == 1 && stat?.pgid == 4240)
        #expect(ProcStat(stat: "12 (z) Z 1 12 12")?.isZombie == true)
        #expect(ProcStat(stat: "garbage") == nil)
    }
}
