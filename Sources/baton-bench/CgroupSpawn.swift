import BatonCore
import CBatonSystem
import Foundation

/// What a cgroup per run costs by itself: each of `parallelism` threads makes a cgroup v2
/// directory under this process's own cgroup, starts `/bin/true` born in it (clone3 with
/// CLONE_INTO_CGROUP | CLONE_PIDFD), waits on the pidfd, and removes the directory. The baseline
/// for batond with its process-tree guarantee, beside the raw `posix_spawn` one.
enum CgroupSpawn {
    /// The directory of this process's own cgroup v2 where it may make cgroups, or why it may not.
    /// The cgroup2 mount is found in /proc/self/mountinfo (beside v1 controllers it is not at
    /// /sys/fs/cgroup), the cgroup in /proc/self/cgroup.
    static func parent() -> Result<String, BenchError> {
        let mountinfo = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        let mount = mountinfo.split(separator: "\n").lazy.compactMap { line -> (root: String, point: String)? in
            let halves = line.components(separatedBy: " - ")
            let fields = halves[0].split(separator: " ")
            guard halves.count == 2, halves[1].hasPrefix("cgroup2 "), fields.count > 4 else { return nil }
            return (String(fields[3]), String(fields[4]))
        }.first
        guard let mount else { return .failure(BenchError("no cgroup v2 is mounted")) }
        let cgroups = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)) ?? ""
        guard let own = cgroups.split(separator: "\n").first(where: { $0.hasPrefix("0::") }).map({ String($0.dropFirst(3)) }) else {
            return .failure(BenchError("this process is in no cgroup v2"))
        }
        guard own.hasPrefix(mount.root) else { return .failure(BenchError("cgroup \(own) is outside the cgroup2 mount (\(mount.root))")) }
        let relative = own.dropFirst(mount.root == "/" ? 0 : mount.root.count)
        let directory = mount.point + (relative == "/" ? "" : relative)
        let probe = directory + "/baton-bench-probe-\(getpid())"
        guard mkdir(probe, 0o755) == 0 else {
            return .failure(BenchError("cgroup v2 at \(directory) is not writable (\(String(cString: strerror(errno))))"))
        }
        rmdir(probe)
        return .success(directory)
    }

    /// `count` runs of `/bin/true`, each in a fresh cgroup, on `parallelism` threads; runs/s.
    static func rate(count: Int, parallelism: Int, in directory: String) async -> Result<Double, BenchError> {
        await blocking {
            // One counter handed out to the threads: each takes the next index (an atomic add, no lock).
            let next = Counter()
            // The first failure, handed to the other threads (they stop) and to the caller.
            let failure = OneShot<String>()
            let watch = Stopwatch()
            _ = onThreads(parallelism) { thread in
                while failure.value == nil {
                    let index = next.next()
                    guard index <= count else { break }
                    if let problem = once(directory + "/baton-bench-\(getpid())-\(thread)-\(index)") { failure.set(problem) }
                }
            }
            let elapsed = watch.seconds
            if let problem = failure.value { return .failure(BenchError(problem)) }
            return .success(Double(count) / elapsed)
        }
    }

    /// mkdir, clone3 into it, wait, rmdir: nil, or what went wrong.
    private static func once(_ cgroup: String) -> String? {
        guard mkdir(cgroup, 0o755) == 0 else { return "mkdir \(cgroup): \(String(cString: strerror(errno)))" }
        defer {
            // The directory empties once its process is reaped; rmdir may still find it busy for a moment.
            var tries = 0
            while rmdir(cgroup) != 0 && errno == EBUSY && tries < 1_000 { tries += 1; sched_yield() }
        }
        let fd = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return "open \(cgroup): \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        var status: Int32 = 0
        let rc = baton_clone3_run_in_cgroup("/bin/true", fd, &status)
        guard rc == 0 else { return "clone3 into \(cgroup): \(String(cString: strerror(rc)))" }
        return status == 0 ? nil : "/bin/true in \(cgroup) ended with status \(status)"
    }
}

/// A process's CPU time by thread kind: the loop (`baton-reactor`) and the writer (`baton-store`),
/// named by /proc/PID/task/*/stat and timed by their schedstat (nanoseconds; utime + stime, in
/// clock ticks, where there is none), and the rest: the whole process's utime + stime
/// (/proc/PID/stat, threads that ended included) less those two.
struct ThreadCPU {
    var loop = 0.0, writer = 0.0, total = 0.0
    var others: Double { max(0, total - loop - writer) }

    init() {}

    init(of pid: Int32) {
        total = Self.seconds(stat: "/proc/\(pid)/stat")?.seconds ?? 0
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let (name, ticked) = Self.seconds(stat: "/proc/\(pid)/task/\(task)/stat") else { continue }
            let seconds = Self.runtime(schedstat: "/proc/\(pid)/task/\(task)/schedstat") ?? ticked
            if name == "baton-reactor" { loop += seconds } else if name == "baton-store" { writer += seconds }
        }
    }

    static func + (one: ThreadCPU, other: ThreadCPU) -> ThreadCPU {
        var sum = ThreadCPU()
        sum.loop = one.loop + other.loop
        sum.writer = one.writer + other.writer
        sum.total = one.total + other.total
        return sum
    }

    static func / (cpu: ThreadCPU, count: Double) -> ThreadCPU {
        var share = ThreadCPU()
        share.loop = cpu.loop / count
        share.writer = cpu.writer / count
        share.total = cpu.total / count
        return share
    }

    static func - (after: ThreadCPU, before: ThreadCPU) -> ThreadCPU {
        var difference = ThreadCPU()
        difference.loop = after.loop - before.loop
        difference.writer = after.writer - before.writer
        difference.total = after.total - before.total
        return difference
    }

    /// The time a thread ran, from the first field of its schedstat (nanoseconds).
    private static func runtime(schedstat path: String) -> Double? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let nanoseconds = text.split(separator: " ").first.flatMap({ Double($0) }) else { return nil }
        return nanoseconds / 1e9
    }

    /// The command name and utime + stime, in seconds, of a stat file.
    private static func seconds(stat path: String) -> (name: String, seconds: Double)? {
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8),
              let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3; utime and stime are fields 14 and 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (String(stat[stat.index(after: open)..<close]), (user + system) / Double(sysconf(Int32(_SC_CLK_TCK))))
    }
}
