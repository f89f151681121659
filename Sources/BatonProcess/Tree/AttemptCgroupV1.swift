import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// One attempt's groups in the cgroup v1 hierarchies that enforce its limits on a hybrid host
/// (`/sys/fs/cgroup/memory/…/baton-3f2a9c1e/run-42-1`, named as its cgroup v2 cgroup). Its
/// processes are the same as its cgroup v2 cgroup's, because the leader joins both before exec
/// and every descendant is born in its parent's groups: the v2 cgroup stops and watches them;
/// these only limit and measure, and are removed once it is empty.
final class AttemptCgroupV1: Sendable {
    /// The groups' directories, one per hierarchy.
    let paths: [String]
    /// Each group's `cgroup.procs`, open for the spawn to write the child into; closed once spawned.
    let procs: [Int32]
    /// The group in the memory hierarchy, where there is one, and its path with a slash as bytes
    /// (its control files are read at the run's end without a `String` built for each).
    let memory: String?
    let memoryDirectory: [UInt8]

    /// One of an action's v1 groups as its `SpawnPlan` keeps it, made once per plan: its path up to
    /// the attempt's name as bytes, whether it is the memory hierarchy's, and its limits. Built per
    /// spawn from `LimitPlan.Group`, the paths' `String` appends, their C strings and the
    /// controllers' `Set` lookup were about 5,500 instructions a run (callgrind, session 27).
    struct Template {
        /// `subtree/`, as bytes.
        let prefix: [UInt8]
        let memory: Bool
        let writes: [LimitPlan.Write]

        init(_ group: LimitPlan.Group) {
            prefix = Array((group.subtree + "/").utf8)
            memory = group.controllers.contains("memory")
            writes = group.writes
        }
    }

    /// `/cgroup.procs` and its NUL, put after a group's path to open it.
    private static let procsFile: [UInt8] = Array("/cgroup.procs".utf8) + [0]

    /// Creates the groups `plan` lists, named `name`, after destroying any of that name a crashed
    /// batond left, with their limits written before any process is in them. Nil when the plan
    /// has none; on a failure, nothing is left.
    static func create(_ groups: [LimitPlan.Group], name: String) -> Result<AttemptCgroupV1?, CgroupUnavailable> {
        create(groups.map(Template.init), name: name)
    }

    /// As above, from the plan's templates: each group's path is one array of bytes, NUL-terminated
    /// for `mkdir`, then ended with `/cgroup.procs` for `open`, and one `String` kept.
    static func create(_ groups: [Template], name: String) -> Result<AttemptCgroupV1?, CgroupUnavailable> {
        guard !groups.isEmpty else { return .success(nil) }
        var made: [String] = [], fds: [Int32] = [], memory: String?, memoryDirectory: [UInt8] = []
        made.reserveCapacity(groups.count)
        fds.reserveCapacity(groups.count)
        func fail(_ why: String) -> Result<AttemptCgroupV1?, CgroupUnavailable> {
            for fd in fds { close(fd) }
            for path in made { rmdir(path) }
            return .failure(CgroupUnavailable(why))
        }
        for group in groups {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(group.prefix.count + name.utf8.count + procsFile.count)
            bytes += group.prefix
            bytes += name.utf8
            let end = bytes.count
            bytes.append(0)
            let path = String(decoding: bytes[..<end], as: UTF8.self)
            if bytes.withCString({ mkdir($0, 0o755) }) != 0 {
                guard errno == EEXIST else { return fail("cannot create \(path): \(String(cString: strerror(errno)))") }
                destroy(path)
                guard mkdir(path, 0o755) == 0 else { return fail("cannot create \(path): \(String(cString: strerror(errno)))") }
            }
            made.append(path)
            for write in group.writes where !AttemptCgroup.write(write.value, to: path + "/" + write.file) {
                return fail("cannot write \(write.value) to \(path)/\(write.file): \(String(cString: strerror(errno)))")
            }
            bytes.removeLast()
            bytes += procsFile
            let fd = bytes.withCString { open($0, O_WRONLY | O_CLOEXEC) }
            guard fd >= 0 else { return fail("cannot open \(path)/cgroup.procs: \(String(cString: strerror(errno)))") }
            fds.append(fd)
            if group.memory {
                memory = path
                memoryDirectory = Array(bytes[...end]) // its path, and the slash `procsFile` begins with
            }
        }
        return .success(AttemptCgroupV1(paths: made, procs: fds, memory: memory, memoryDirectory: memoryDirectory))
    }

    private init(paths: [String], procs: [Int32], memory: String?, memoryDirectory: [UInt8]) {
        self.paths = paths
        self.procs = procs
        self.memory = memory
        self.memoryDirectory = memoryDirectory
    }

    /// The memory group's control files read at a run's end, NUL-terminated.
    private static let maxUsageFile: [UInt8] = Array("memory.max_usage_in_bytes".utf8) + [0]
    private static let oomControlFile: [UInt8] = Array("memory.oom_control".utf8) + [0]

    func closeProcs() { for fd in procs { close(fd) } }

    /// The memory group's peak (`memory.max_usage_in_bytes`).
    func memoryPeak() -> Int64? {
        guard memory != nil, let bytes = KernelFile.read(Self.maxUsageFile, under: memoryDirectory, oneRecord: true) else { return nil }
        return KernelFile.number(in: bytes)
    }

    /// How many of its processes the kernel killed at the memory limit: the `oom_kill` line of
    /// `memory.oom_control` (Linux 4.13 and later); nil where unknown.
    func oomKills() -> Int? {
        guard memory != nil, let bytes = KernelFile.read(Self.oomControlFile, under: memoryDirectory, oneRecord: true) else { return nil }
        return AttemptCgroup.oomKills(memoryEvents: bytes)
    }

    /// Moves `pids` into batond's own group of each hierarchy (the subtree's parent): for
    /// `leftovers: "keep"`, while the v2 cgroup holds them frozen.
    func evict(_ pids: Set<Int32>) {
        for path in paths {
            let home = path.parentPath.parentPath
            for pid in pids { AttemptCgroup.write(String(pid), to: home + "/cgroup.procs") }
        }
    }

    /// Removes the groups (empty by then, their processes being the v2 cgroup's).
    func remove() {
        for path in paths where rmdir(path) != 0 && errno == EBUSY { Self.destroy(path) }
    }

    /// Kills whatever is in the group at `path` (v1 has no `cgroup.kill`: each listed process,
    /// again until none is listed), waits (bounded) for it to empty, removes it; returns how many
    /// processes it killed.
    @discardableResult
    static func destroy(_ path: String) -> Int {
        var killed: Set<Int32> = []
        var tries = 0
        while rmdir(path) != 0 && errno == EBUSY && tries < 200 {
            for pid in AttemptCgroup.members(of: path) where kill(pid, SIGKILL) == 0 { killed.insert(pid) }
            usleep(5_000)
            tries += 1
        }
        return killed.count
    }

    /// Kills and removes every attempt's group left in the subtrees (by a batond that crashed);
    /// returns how many processes it killed.
    @discardableResult
    static func removeAll(in subtrees: Set<String>, except kept: Set<String> = []) -> Int {
        var killed = 0
        for subtree in subtrees.sorted() {
            guard let entries = try? FileManager.default.contentsOfDirectory(atPath: subtree) else { continue }
            for name in entries where (name.hasPrefix("run-") || name.hasPrefix("probe-")) && !kept.contains(name) { killed += destroy(subtree + "/" + name) }
        }
        return killed
    }
}

extension [UInt8] {
    /// The bytes as a C string (the caller put the NUL at the end).
    fileprivate func withCString<R>(_ body: (UnsafePointer<CChar>) -> R) -> R {
        withUnsafeBufferPointer { body(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self)) }
    }
}
