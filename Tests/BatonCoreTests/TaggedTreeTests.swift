@testable import BatonProcess
import CBatonSystem
import Foundation
import Testing

/// Finding a run's processes without a cgroup: the `children` files are the cheap way, but the
/// kernel may skip a child in them while siblings exit; an empty answer, which ends an attempt,
/// is checked against every process's `stat`.
@Suite("Tagged tree")
struct TaggedTreeTests {
    /// A `sleep` child of this process tagged as run `run` of `instance`, in a group of its own.
    static func tagged(instance: String, run: Int64) throws -> pid_t {
        let devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(devnull) }
        var pid: pid_t = 0
        let env = ["PATH=/usr/bin:/bin", "BATON_INSTANCE=\(instance)", "BATON_RUN_ID=\(run)"]
        let rc = withCStrings(["sleep", "30"]) { argv in
            withCStrings(env) { envp in baton_spawn(argv, envp, nil, devnull, devnull, -1, &pid) }
        }
        try #require(rc == 0, "spawn: \(rc)")
        return pid
    }

    static func reap(_ pid: pid_t) {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    @Test("a children file that skips a member (as the kernel's may while siblings exit) does not make the tree look empty")
    func skippedChildIsFound() throws {
        let instance = "tagged-tree-" + UUID().uuidString
        let member = try Self.tagged(instance: instance, run: 7)
        defer { Self.reap(member) }
        let stranger = try Self.tagged(instance: instance, run: 8)
        defer { Self.reap(stranger) }
        // The leader is gone (a pid that no process has): only the tag finds the member.
        let tree = TaggedTree(leader: Int32.max - 1, instance: instance, run: 7)
        #expect(tree.members(others: [], subreaper: true) == [member], "the kernel's files find it")
        let me = getpid()
        let skipping: (Int32) -> [Int32]? = { pid in pid == me ? [] : TaggedTree.children(of: pid) }
        #expect(tree.membersByChildren(others: [], children: skipping) == [], "the walk alone misses it")
        #expect(tree.members(others: [], subreaper: true, children: skipping) == [member], "the empty walk is checked against /proc")
        #expect(tree.members(others: [member], subreaper: true, children: skipping).isEmpty, "another attempt's leader is not a member")
    }
}
