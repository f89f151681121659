import Foundation

/// A process's CPU time by thread: each living thread's name (/proc/PID/task/TID/stat, 15
/// characters) and time (its schedstat's first field, nanoseconds; utime + stime in clock ticks
/// where there is none), and the whole process's utime + stime (/proc/PID/stat), which also holds
/// the threads that ended. A difference of two readings (`after - before`) is per thread: a thread
/// that ended in between shows only in `total`, in `ended`.
struct ThreadCPU {
    /// Living threads by thread id: name and seconds.
    var threads: [Int32: (name: String, seconds: Double)] = [:]
    var total = 0.0

    /// The loop (`baton-reactor`) and the writer (`baton-store`).
    var loop: Double { seconds(named: "baton-reactor") }
    var writer: Double { seconds(named: "baton-store") }
    /// Everything else, threads that ended included.
    var others: Double { max(0, total - loop - writer) }
    /// What no living thread accounts for: threads that ended (in a difference, the time since the
    /// first reading of those that ended before the second), and the process total's rounding to
    /// a clock tick (10 ms over the whole batch); may be slightly below zero by that rounding.
    var ended: Double { total - threads.values.reduce(0) { $0 + $1.seconds } }

    /// Seconds by thread name, summed over the threads of that name.
    var byName: [String: Double] { threads.values.reduce(into: [:]) { $0[$1.name, default: 0] += $1.seconds } }

    func seconds(named name: String) -> Double {
        threads.values.reduce(0) { $0 + ($1.name == name ? $1.seconds : 0) }
    }

    /// The kinds of the other threads, as their figures name them (always all, for the JSON's sake).
    static let kinds = ["spawner threads (baton-spawn)", "log thread (baton-log)", "store readers (baton-store-rea, baton-search)",
                        "main thread (batond)", "Dispatch's threads", "other named threads"]

    /// The kind of a thread by its name: batond names its own threads `baton-…` (`SerialWorker`'s
    /// name, cut to 15 characters); the main thread keeps the process's; Dispatch's workers are
    /// named after their queue's QoS (`…-qos`, `…qos.overcommit`), cut.
    static func kind(of name: String) -> String {
        switch name {
        case "baton-spawn": kinds[0]
        case "baton-log": kinds[1]
        case "baton-store-rea", "baton-search": kinds[2]
        case "batond": kinds[3]
        case _ where name.contains("qos"): kinds[4]
        default: kinds[5]
        }
    }

    init() {}

    init(of pid: Int32) {
        let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
        total = Self.read("/proc/\(pid)/stat").flatMap(Self.parse(stat:)).map { Double($0.ticks) / tick } ?? 0
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        for task in tasks {
            guard let tid = Int32(task), let (name, ticks) = Self.read("/proc/\(pid)/task/\(task)/stat").flatMap(Self.parse(stat:)) else { continue }
            let nanoseconds = Self.read("/proc/\(pid)/task/\(task)/schedstat").flatMap(Self.parse(schedstat:))
            threads[tid] = (name, nanoseconds.map { Double($0) / 1e9 } ?? Double(ticks) / tick)
        }
    }

    /// Two processes' together (thread ids are the machine's: they do not collide).
    static func + (one: ThreadCPU, other: ThreadCPU) -> ThreadCPU {
        var sum = one
        sum.threads.merge(other.threads) { mine, _ in mine }
        sum.total += other.total
        return sum
    }

    static func / (cpu: ThreadCPU, count: Double) -> ThreadCPU {
        var share = cpu
        share.threads = cpu.threads.mapValues { ($0.name, $0.seconds / count) }
        share.total = cpu.total / count
        return share
    }

    /// Per thread: a thread in both, its time in between; one born since, all its time; one that
    /// ended since, nothing (its time is in `total`, so in `ended`).
    static func - (after: ThreadCPU, before: ThreadCPU) -> ThreadCPU {
        var difference = ThreadCPU()
        difference.threads = after.threads.reduce(into: [:]) { threads, entry in
            threads[entry.key] = (entry.value.name, entry.value.seconds - (before.threads[entry.key]?.seconds ?? 0))
        }
        difference.total = after.total - before.total
        return difference
    }

    private static func read(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    /// The command name and utime + stime (clock ticks) of a stat line. The name is between the
    /// first "(" and the last ")" (it may hold spaces and parentheses); after it, state is field 3,
    /// utime and stime fields 14 and 15.
    static func parse(stat: String) -> (name: String, ticks: Int)? {
        guard let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")"), open < close else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return (String(stat[stat.index(after: open)..<close]), user + system)
    }

    /// The time a thread ran, in nanoseconds: the first field of its schedstat.
    static func parse(schedstat: String) -> Int? {
        schedstat.split(separator: " ").first.flatMap { Int($0) }
    }
}
