@testable import BatonProcess
@testable import BatonCore
import CBatonSystem
import Foundation
import Testing

/// A cgroup's member lists are files of records: the kernel ends a read short at the record that
/// would not fit its page, with more to come. With many members (more than a page of pids) every
/// one is read (`AttemptCgroup.members`: `cgroup.procs`; `cgroup.threads` through `KernelFile`).
@Suite("Cgroup members", .serialized)
struct CgroupMembersTests {
    @Test("1,200 processes in an attempt's cgroup: cgroup.procs and cgroup.threads are read whole, past a page each")
    func manyMembers() throws {
        guard case let .success(hierarchy) = CgroupHierarchy.prepare(instance: "members-test-\(UUID().uuidString)") else { return }
        defer { hierarchy.removeSubtrees() }
        let path = hierarchy.path(run: 1, attempt: 1)
        let cgroup = try AttemptCgroup.create(path, home: hierarchy.home).get()
        defer { AttemptCgroup.destroy(path) }
        var out: [Int32] = [-1, -1]
        #expect(pipe(&out) == 0)
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        let count = 1_200
        let script = "i=0; while [ $i -lt \(count) ]; do sleep 300 & i=$((i+1)); done; echo ready; wait"
        var pid: pid_t = 0, pidfd: Int32 = -1
        let rc = withCStrings(["sh", "-c", script]) { argv in
            withCStrings(["PATH=/usr/bin:/bin"]) { envp in
                baton_spawn_clone3(argv, envp, nil, out[1], null, -1, cgroup.directory, nil, 0, 0, 0, 0, nil, 0, 0, 0, &pid, &pidfd)
            }
        }
        close(out[1])
        cgroup.closeProcs()
        defer { close(out[0]) }
        guard rc == 0 else { return } // no clone3 into a cgroup here: nothing to count
        defer {
            cgroup.signal(SIGKILL)
            var info = siginfo_t()
            _ = waitid(P_PID, id_t(pid), &info, WEXITED)
            close(pidfd)
        }
        var line = [UInt8](repeating: 0, count: 16)
        #expect(read(out[0], &line, line.count) > 0, "the shell started its sleeps")
        let procs = cgroup.members()
        let threads = Set(KernelFile.numbers(in: try #require(KernelFile.read(path + "/cgroup.threads"))).compactMap { Int32(exactly: $0) })
        #expect(procs.count == count + 1)
        #expect(procs.contains(pid))
        #expect(threads == procs, "one thread each")
        // More than a page each: the short reads were gone past.
        #expect(procs.map { String($0).utf8.count + 1 }.reduce(0, +) > 4096)
    }
}
