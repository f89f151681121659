import CBatonSystem
import Foundation

/// One attempt's cgroup (`…/baton-…/run-42-1`): its processes are exactly the attempt's tree,
/// whatever `setsid` or double forks they did, because the leader was in it before its first
/// instruction and every descendant is born in its parent's cgroup.
final class AttemptCgroup: Sendable {
    let path: String
    /// batond's own cgroup, where kept leftovers go.
    let home: String
    /// `cgroup.procs`, open for the spawn to write the child into; closed once spawned.
    let procs: Int32
    /// `cgroup.events`, watched for `populated 0` (epoll reports a change as EPOLLPRI).
    let events: Int32

    /// Creates the cgroup (after destroying one of the same name a crashed batond left), with
    /// `limits` written into its control files before any process is in it.
    static func create(_ path: String, home: String, limits: ResourceLimits = .init()) -> Result<AttemptCgroup, CgroupUnavailable> {
        if mkdir(path, 0o755) != 0 {
            guard errno == EEXIST else { return .failure(CgroupUnavailable("cannot create \(path): \(String(cString: strerror(errno)))")) }
            destroy(path)
            guard mkdir(path, 0o755) == 0 else { return .failure(CgroupUnavailable("cannot create \(path): \(String(cString: strerror(errno)))")) }
        }
        for (file, value) in limits.controlFiles where !write(value, to: path + "/" + file) {
            let reason = String(cString: strerror(errno))
            rmdir(path)
            return .failure(CgroupUnavailable("cannot write \(value) to \(path)/\(file): \(reason)"))
        }
        let procs = open(path + "/cgroup.procs", O_WRONLY | O_CLOEXEC)
        let events = open(path + "/cgroup.events", O_RDONLY | O_CLOEXEC)
        guard procs >= 0, events >= 0 else {
            let reason = String(cString: strerror(errno))
            if procs >= 0 { close(procs) }
            if events >= 0 { close(events) }
            rmdir(path)
            return .failure(CgroupUnavailable("cannot open \(path)'s control files: \(reason)"))
        }
        return .success(AttemptCgroup(path: path, home: home, procs: procs, events: events))
    }

    private init(path: String, home: String, procs: Int32, events: Int32) {
        self.path = path
        self.home = home
        self.procs = procs
        self.events = events
    }

    /// The pids in it now.
    func members() -> Set<Int32> { Self.members(of: path) }

    static func members(of path: String) -> Set<Int32> {
        guard let text = try? String(contentsOfFile: path + "/cgroup.procs", encoding: .utf8) else { return [] }
        return Set(text.split(separator: "\n").compactMap { Int32($0) })
    }

    /// Whether any process is in it, from `cgroup.events` (read again: that also clears epoll's report).
    func isPopulated() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = buffer.withUnsafeMutableBytes { pread(events, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return !members().isEmpty }
        return String(decoding: buffer[..<n], as: UTF8.self).contains("populated 1")
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
        guard let text = try? String(contentsOfFile: path + "/cpu.stat", encoding: .utf8) else { return nil }
        var user: Int64?, system: Int64?
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let value = Int64(parts[1]) else { continue }
            if parts[0] == "user_usec" { user = value }
            if parts[0] == "system_usec" { system = value }
        }
        guard let user, let system else { return nil }
        return (.microseconds(user), .microseconds(system))
    }

    /// The cgroup's peak memory (`memory.peak`), where the memory controller is on cgroup v2.
    func memoryPeak() -> Int64? {
        guard let text = try? String(contentsOfFile: path + "/memory.peak", encoding: .utf8) else { return nil }
        return Int64(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// How many of its processes the kernel killed at the memory limit (`memory.events`); nil
    /// where the memory controller is not enabled for it.
    func oomKills() -> Int? {
        guard let text = try? String(contentsOfFile: path + "/memory.events", encoding: .utf8) else { return nil }
        return Self.oomKills(memoryEvents: text)
    }

    /// The `oom_kill` count of a `memory.events` text (`low 0`, `high 0`, `max 3`, `oom 1`, `oom_kill 1`, …).
    static func oomKills(memoryEvents text: String) -> Int? {
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, parts[0] == "oom_kill" { return Int(parts[1]) }
        }
        return nil
    }

    func closeProcs() { close(procs) }

    /// Moves every process out, into `destination` (batond's own cgroup), frozen meanwhile so that
    /// none forks in between: for `leftovers: "keep"`, whose processes are no longer the run's.
    func evict(to destination: String) {
        let frozen = Self.write("1", to: path + "/cgroup.freeze")
        for pid in members() { Self.write(String(pid), to: destination + "/cgroup.procs") }
        if frozen { Self.write("0", to: path + "/cgroup.freeze") }
    }

    /// Closes its files and removes it (it is empty by then; a cgroup with members cannot go).
    func remove() {
        close(events)
        if rmdir(path) != 0 && errno == EBUSY { Self.destroy(path) }
    }

    /// Kills whatever is in the cgroup at `path`, waits (bounded) for it to empty, removes it;
    /// returns how many processes it held.
    @discardableResult
    static func destroy(_ path: String) -> Int {
        let count = members(of: path).count
        if count > 0 { write("1", to: path + "/cgroup.kill") }
        for _ in 0..<200 where rmdir(path) != 0 && errno == EBUSY {
            usleep(5_000)
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
