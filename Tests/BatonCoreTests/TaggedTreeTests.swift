@testable import BatonProcess
import BatonEngine
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

    /// An untagged `sh` in a group of its own with a `sleep` child; the sleep's pid.
    static func untaggedParent() throws -> (parent: pid_t, child: pid_t) {
        let devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(devnull) }
        var pid: pid_t = 0
        let rc = withCStrings(["sh", "-c", "sleep 30 & wait"]) { argv in
            withCStrings(["PATH=/usr/bin:/bin"]) { envp in baton_spawn(argv, envp, nil, devnull, devnull, -1, &pid) }
        }
        try #require(rc == 0)
        let child = Eventually.value("the sleep, a child of \(pid)", within: 30, { TaggedTree.children(of: pid)?.first }) { $0 != nil }
        return (pid, child ?? -1)
    }

    @Test("an adopted tree trusts its recorded leader's group and descendants only while that pid is still the leader (its identity)")
    func adoptedLeaderChecked() throws {
        let (parent, child) = try Self.untaggedParent()
        defer {
            kill(child, SIGKILL)
            Self.reap(parent)
        }
        let instance = "tagged-tree-" + UUID().uuidString
        let stranger = TaggedTree(leader: parent, instance: instance, run: 7, adopted: true, leaderIdentity: "not-its-identity")
        #expect(!stranger.members(others: [], subreaper: false).contains(child), "a pid that is someone else's now: not ours")
        let ours = TaggedTree(leader: parent, instance: instance, run: 7, adopted: true, leaderIdentity: ProcessGroup.identity(of: parent))
        #expect(ours.members(others: [], subreaper: false).contains(child), "the shim still: its descendants are the tree's")
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

    @Test("an adopted tree whose tagged top process died after /proc was listed (no environment left to read): its children, in the listing under it, are found by their own tags")
    func rootGoneWhileRead() {
        var table = ProcessTable()
        // 200: the setsid leader of the run's detached pair, tagged, dead before its environment was read;
        // 201: its child, tagged (listed under 200, being re-parented now); 300: a stranger, untagged.
        for (pid, parent) in [(Int32(200), Int32(1)), (201, 200), (300, 1)] {
            table.processes[pid] = ProcStat(state: "S", parent: parent, pgid: pid == 201 ? 200 : pid)
            table.byParent[parent, default: []].append(pid)
        }
        let tag = Array("BATON_INSTANCE=i\0BATON_RUN_ID=7\0".utf8)
        let environments: [Int32: [UInt8]] = [201: tag, 300: Array("HOME=/\0".utf8)]
        let tree = TaggedTree(leader: Int32.max - 1, instance: "i", run: 7, adopted: true, leaderIdentity: "gone")
        let members = tree.members(others: [], subreaper: false, table: { table }, environ: { environments[$0] })
        #expect(members == [201], "\(members)")
        #expect(tree.members(others: [201], subreaper: false, table: { table }, environ: { environments[$0] }).isEmpty, "another attempt's leader is not a member")
    }
}
