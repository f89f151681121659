import FoundationEssentials
import Glibc

extension Daemon {
    /// Raises the open-file limit to what `maxConnections` and the runs need (each running attempt
    /// holds six: a pidfd, three pipes' read ends, its cgroup's `cgroup.events` and its cgroup's
    /// directory, kept open until the cgroup is removed), up to the hard limit; returns how many connections fit
    /// (fewer than `maxConnections` when the hard limit is lower, with a warning when it matters).
    static func openFileRoom(for config: Config) -> Int {
        let forRuns = config.maxConcurrentRuns * 6 + 128
        let wanted = rlim_t(config.maxConnections + forRuns)
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return config.maxConnections }
        if limit.rlim_cur < wanted {
            limit.rlim_cur = min(wanted, limit.rlim_max)
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        let room = max(Int(limit.rlim_cur) - forRuns, 8)
        // The default quietly fits a hard limit that is merely lower; a small room, or a number the
        // config asked for, is worth saying.
        if room < config.maxConnections && (config.maxConnectionsGiven || room < 1_024) {
            Log.warning("the open-file limit (\(limit.rlim_cur)) leaves room for \(room) connections, not maxConnections "
                + "(\(config.maxConnections)); raise LimitNOFILE= to allow more")
        }
        return min(room, config.maxConnections)
    }
}
