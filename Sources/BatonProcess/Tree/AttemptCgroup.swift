import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// One attempt's cgroup (`…/baton-…/run-42-1`): its processes are exactly the attempt's tree,
/// whatever `setsid` or double forks they did, because the leader was in it before its first
/// instruction and every descendant is born in its parent's cgroup.
final class AttemptCgroup: Sendable {
    let path: String
    /// batond's own cgroup, where kept leftovers go.
    let home: String
    /// The cgroup's directory, open from its creation to its removal: clone3 is given it
    /// (`CLONE_INTO_CGROUP`), or the fallback opens its `cgroup.procs` for the child to write itself
    /// into; its control files are opened relative to it (`openat`: no walk of the long path each time).
    let directory: Int32
    /// `cgroup.events`, watched for `populated 0` (epoll reports a change as EPOLLPRI).
    let events: Int32
    /// Its groups in cgroup v1 hierarchies, where those enforce its limits (a hybrid host).
    let v1: AttemptCgroupV1?

    /// Creates the cgroup (after destroying one of the same name a crashed batond left), and the
    /// v1 groups `plan` lists, with the plan's limits written into their control files before
    /// any process is in them. `name` is the path's last component (given: a `baseName` of a long
    /// path cost a spawn 11,000 instructions); `v1`, the plan's v1 groups as its `SpawnPlan` keeps them.
    static func create(_ path: String, name: String? = nil, home: String, plan: LimitPlan = .init(),
                       v1 templates: [AttemptCgroupV1.Template]? = nil) -> Result<AttemptCgroup, CgroupUnavailable> {
        if mkdir(path, 0o755) != 0 {
            guard errno == EEXIST else { return .failure(CgroupUnavailable("cannot create \(path): \(String(cString: strerror(errno)))")) }
            destroy(path)
            guard mkdir(path, 0o755) == 0 else { return .failure(CgroupUnavailable("cannot create \(path): \(String(cString: strerror(errno)))")) }
        }
        for control in plan.v2 where !write(control.value, to: path + "/" + control.file) {
            let reason = String(cString: strerror(errno))
            rmdir(path)
            return .failure(CgroupUnavailable("cannot write \(control.value) to \(path)/\(control.file): \(reason)"))
        }
        let v1: AttemptCgroupV1?
        let name = name ?? path.baseName
        switch templates.map({ AttemptCgroupV1.create($0, name: name) }) ?? AttemptCgroupV1.create(plan.v1, name: name) {
        case let .success(made): v1 = made
        case let .failure(why):
            rmdir(path)
            return .failure(why)
        }
        let directory = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let events = directory >= 0 ? openat(directory, "cgroup.events", O_RDONLY | O_CLOEXEC) : -1
        guard directory >= 0, events >= 0 else {
            let reason = String(cString: strerror(errno))
            if directory >= 0 { close(directory) }
            if events >= 0 { close(events) }
            v1?.closeProcs()
            v1?.remove()
            rmdir(path)
            return .failure(CgroupUnavailable("cannot open \(path)'s control files: \(reason)"))
        }
        return .success(AttemptCgroup(path: path, home: home, directory: directory, events: events, v1: v1))
    }

    private init(path: String, home: String, directory: Int32, events: Int32, v1: AttemptCgroupV1?) {
        self.path = path
        self.home = home
        self.directory = directory
        self.events = events
        self.v1 = v1
    }

    /// The pids in it now.
    func members() -> Set<Int32> { Self.members(of: path) }

    static func members(of path: String) -> Set<Int32> {
        guard let bytes = KernelFile.read(path + "/cgroup.procs") else { return [] }
        return Set(KernelFile.numbers(in: bytes).compactMap { Int32(exactly: $0) })
    }

    /// Whether any process is in it, from `cgroup.events` (read again: that also clears epoll's report).
    func isPopulated() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { pread(events, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return !members().isEmpty }
        return KernelFile.value(of: "populated", in: Array(buffer[..<n])) == 1
    }

    /// Sends `signal` to every process in it. SIGKILL is `cgroup.kill` (no process can escape it
    /// by forking); any other is sent with the cgroup frozen, so that no member forks between the
    /// listing and the signals, and is delivered when it thaws.
    func signal(_ signal: Int32) {
        if signal == SIGKILL {
            Self.write("1", to: path + "/cgroup.kill")
            return
        }
        let frozen = Self.write("1", to: path + "/cgroup.freeze")
        for pid in members() { kill(pid, signal) }
        if frozen { Self.write("0", to: path + "/cgroup.freeze") }
    }

    /// The CPU time its processes used, from `cpu.stat` (present without the cpu controller).
    func cpuTime() -> (user: Duration, system: Duration)? {
        guard let bytes = KernelFile.read("cpu.stat", in: directory, oneRecord: true), let user = KernelFile.value(of: "user_usec", in: bytes),
              let system = KernelFile.value(of: "system_usec", in: bytes) else { return nil }
        return (.microseconds(user), .microseconds(system))
    }

    /// The cgroup's peak memory (`memory.peak`) where the memory controller is on cgroup v2, else
    /// its v1 memory group's (`memory.max_usage_in_bytes`).
    func memoryPeak() -> Int64? {
        // A controller serves one hierarchy: with a v1 memory group (a hybrid host) v2 has no memory files.
        if let v1, v1.memory != nil { return v1.memoryPeak() }
        guard let bytes = KernelFile.read("memory.peak", in: directory, oneRecord: true) else { return v1?.memoryPeak() }
        return KernelFile.number(in: bytes)
    }

    /// How many of its processes the kernel killed at the memory limit (`memory.events`, or its
    /// v1 memory group's `memory.oom_control`); nil where no memory controller serves it.
    func oomKills() -> Int? {
        if let v1, v1.memory != nil { return v1.oomKills() }
        guard let bytes = KernelFile.read("memory.events", in: directory, oneRecord: true) else { return v1?.oomKills() }
        return Self.oomKills(memoryEvents: bytes)
    }

    /// The `oom_kill` count of a `memory.events` text (`low 0`, `high 0`, `max 3`, `oom 1`, `oom_kill 1`, …),
    /// or of a v1 `memory.oom_control` (`oom_kill_disable 0`, `under_oom 0`, `oom_kill 1`).
    static func oomKills(memoryEvents bytes: [UInt8]) -> Int? {
        KernelFile.value(of: "oom_kill", in: bytes).flatMap { Int(exactly: $0) }
    }

    /// Its `cgroup.procs`, opened for a spawn that cannot use clone3 (the child writes itself in); -1 and errno when it cannot.
    func openProcs() -> Int32 { openat(directory, "cgroup.procs", O_WRONLY | O_CLOEXEC) }

    /// Closes what only the spawn needed (the directory stays open until `remove`).
    func closeProcs() {
        v1?.closeProcs()
    }

    /// Moves every process out, into `destination` (batond's own cgroup), frozen meanwhile so that
    /// none forks in between: for `leftovers: "keep"`, whose processes are no longer the run's.
    func evict(to destination: String) {
        let frozen = Self.write("1", to: path + "/cgroup.freeze")
        let members = members()
        v1?.evict(members)
        for pid in members { Self.write(String(pid), to: destination + "/cgroup.procs") }
        if frozen { Self.write("0", to: path + "/cgroup.freeze") }
    }

    /// Closes its files and removes it and its v1 groups (it is empty by then; a cgroup with
    /// members cannot go).
    func remove() {
        close(events)
        close(directory)
        if rmdir(path) != 0 && errno == EBUSY { Self.destroy(path) }
        v1?.remove()
    }

    /// Kills whatever is in the cgroup at `path`, waits (bounded) for it to empty, removes it;
    /// returns how many processes it held.
    @discardableResult
    static func destroy(_ path: String) -> Int {
        let count = members(of: path).count
        if count > 0 { write("1", to: path + "/cgroup.kill") }
        var tries = 0
        while rmdir(path) != 0 && errno == EBUSY && tries < 200 {
            usleep(5_000)
            tries += 1
        }
        return count
    }

    @discardableResult
    static func write(_ text: String, to path: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return baton_write_control(fd, text) == 0
    }
}
