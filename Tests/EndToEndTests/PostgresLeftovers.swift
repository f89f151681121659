import CBatonSystem
import Foundation

/// The servers and data directories of test processes that died before their `atexit` ran (a
/// killed `swift test`, a timeout): each holds about 1 GB after a fleet suite and its server runs
/// on. Every directory names its test process (pid and start time, so a reused pid is not taken
/// for it); a test process that starts a server first stops and removes the leftovers of the dead.
enum PostgresLeftovers {
    static let ownerFile = "owner"
    static let prefix = "baton-pg-"

    /// This process: `PID START` (the start time in clock ticks since boot, from /proc).
    static func ownerLine(pid: pid_t = getpid()) -> String { "\(pid) \(startTime(of: pid) ?? "?")" }

    static func startTime(of pid: pid_t) -> String? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 19 ? String(fields[19]) : nil
    }

    /// Whether the directory's test process is gone: its owner line names no living process of that
    /// start time; a directory without one (made before owners were written) when untouched for an hour.
    static func isLeftover(_ directory: String, now: Date = Date()) -> Bool {
        guard let owner = try? String(contentsOfFile: directory + "/" + ownerFile, encoding: .utf8) else {
            let modified = (try? FileManager.default.attributesOfItem(atPath: directory)[.modificationDate]) as? Date
            return modified.map { now.timeIntervalSince($0) > 3_600 } ?? false
        }
        let parts = owner.split(separator: " ")
        guard parts.count == 2, let pid = pid_t(parts[0]) else { return true }
        return startTime(of: pid) != String(parts[1])
    }

    /// Stops each leftover's server (if it still runs) and removes its directory.
    static func sweep(in temporary: String = NSTemporaryDirectory(), pgCtl: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
        for name in names where name.hasPrefix(prefix) {
            let directory = (temporary as NSString).appendingPathComponent(name)
            guard isLeftover(directory) else { continue }
            if FileManager.default.fileExists(atPath: directory + "/data/postmaster.pid") {
                _ = Postgres.shell("/usr/sbin/runuser -u postgres -- \(pgCtl) -D \(directory)/data -m immediate -w stop > /dev/null 2>&1")
            }
            try? FileManager.default.removeItem(atPath: directory)
        }
    }
}

extension Postgres {
    /// Once per test process, before its first server.
    static func sweepLeftovers() {
        guard !swept else { return }
        swept = true
        PostgresLeftovers.sweep(pgCtl: bin("pg_ctl"))
    }
}
