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

    /// What `rate` measured: spawns/s, and this process's CPU seconds per spawn (utime + stime of
    /// all its threads: the spawning side's mkdir, clone3, wait and rmdir, not the children's).
    struct Measured: Sendable {
        var rate: Double
        var cpu: Double

        static func mean(_ one: Measured, _ other: Measured) -> Measured {
            Measured(rate: (one.rate + other.rate) / 2, cpu: (one.cpu + other.cpu) / 2)
        }
    }

    /// `count` runs of `/bin/true`, each in a fresh cgroup, on `parallelism` threads.
    static func rate(count: Int, parallelism: Int, in directory: String) async -> Result<Measured, BenchError> {
        await blocking {
            // One counter handed out to the threads: each takes the next index (an atomic add, no lock).
            let next = Counter()
            // The first failure, handed to the other threads (they stop) and to the caller.
            let failure = OneShot<String>()
            let cpu = processCPU()
            let watch = Stopwatch()
            _ = onThreads(parallelism) { thread in
                while failure.value == nil {
                    let index = next.next()
                    guard index <= count else { break }
                    if let problem = once(directory + "/baton-bench-\(getpid())-\(thread)-\(index)") { failure.set(problem) }
                }
            }
            let elapsed = watch.seconds
            let used = processCPU() - cpu
            if let problem = failure.value { return .failure(BenchError(problem)) }
            return .success(Measured(rate: Double(count) / elapsed, cpu: used / Double(count)))
        }
    }

    /// This process's utime + stime so far, in seconds (its children's excluded).
    static func processCPU() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let seconds = { (time: timeval) in Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
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
