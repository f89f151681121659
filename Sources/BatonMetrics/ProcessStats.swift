import BatonEngine
import BatonRuntime
import FoundationEssentials
import Glibc

/// The process collector's standard series, read from /proc/self as client libraries do.
public struct ProcessStats: Sendable, Equatable {
    public var residentBytes: Double
    public var virtualBytes: Double
    public var cpuSeconds: Double
    public var openFDs: Double
    public var maxFDs: Double
    /// Seconds since the Unix epoch.
    public var startTime: Double

    /// This process now; nil where /proc cannot be read.
    public static func current() -> ProcessStats? {
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
              let bootTime = bootTime() else { return nil }
        return parse(stat: stat, bootTime: bootTime, ticksPerSecond: Double(sysconf(Int32(_SC_CLK_TCK))),
                     pageSize: Double(sysconf(Int32(_SC_PAGESIZE))), openFDs: openFDs(), maxFDs: maxFDs())
    }

    /// From /proc/self/stat's fields: those after the command name's closing parenthesis (which
    /// may itself hold spaces and parentheses).
    static func parse(stat: String, bootTime: Double, ticksPerSecond: Double, pageSize: Double,
                      openFDs: Double, maxFDs: Double) -> ProcessStats? {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        // Field 3 (state) is fields[0]; utime is field 14, stime 15, starttime 22, vsize 23, rss 24.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        func number(_ field: Int) -> Double? { fields.count > field - 3 ? Double(fields[field - 3]) : nil }
        guard let utime = number(14), let stime = number(15), let start = number(22), let vsize = number(23),
              let rss = number(24) else { return nil }
        return ProcessStats(residentBytes: rss * pageSize, virtualBytes: vsize, cpuSeconds: (utime + stime) / ticksPerSecond,
                            openFDs: openFDs, maxFDs: maxFDs, startTime: bootTime + start / ticksPerSecond)
    }

    /// The `btime` line of /proc/stat: when the machine booted, in seconds since the epoch.
    static func bootTime() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") { return Double(line.dropFirst(6)) }
        return nil
    }

    static func openFDs() -> Double {
        Double((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"))?.count ?? 0)
    }

    static func maxFDs() -> Double {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        return limit.rlim_cur == rlim_t.max ? .infinity : Double(limit.rlim_cur)
    }
}
