import BatonCore
import FoundationEssentials

extension History {
    /// Stats of the given actions (every action in the history when empty) over the runs that
    /// ended since `since`. Each figure is one index-backed query per action.
    public func stats(actions: [String] = [], since: Timestamp? = nil) throws -> [ActionStats] {
        let names = actions.isEmpty ? try actionNames().sorted() : actions
        return try names.map { try stats(of: $0, since: since) }
    }

    func stats(of action: String, since: Timestamp?) throws -> ActionStats {
        let from = since?.rawValue ?? Int64.min
        var counts: [Phase: Int] = [:]
        try connection.withStatement("""
            SELECT phase, count(*) FROM runs INDEXED BY runs_by_action_outcome
            WHERE action = ? AND phase IN ('success', 'failure', 'cancelled') AND ended_at >= ? GROUP BY phase
            """) { statement in
            try statement.bind([.text(action), .integer(from)])
            while try statement.step() {
                if let phase = statement.string(0).flatMap(Phase.init(rawValue:)) { counts[phase] = Int(statement.int64(1) ?? 0) }
            }
        }
        var durations = try connection.withStatement("""
            SELECT ended_at - started_at FROM runs INDEXED BY runs_by_action_outcome
            WHERE action = ? AND phase = 'success' AND ended_at >= ? AND started_at IS NOT NULL
            """) { statement -> [Int64] in
            try statement.bind([.text(action), .integer(from)])
            var list: [Int64] = []
            while try statement.step() { if let value = statement.int64(0) { list.append(value) } }
            return list
        }
        durations.sort()
        func latest(_ phase: String) throws -> Timestamp? {
            try connection.scalar("SELECT max(ended_at) FROM runs WHERE action = ? AND phase = ? AND ended_at >= ?",
                                  [.text(action), .text(phase), .integer(from)])?.int64.map(Timestamp.init(rawValue:))
        }
        let lastSuccess = try latest("success")
        let failureStreak = Int(try connection.scalar("""
            SELECT count(*) FROM runs WHERE action = ? AND phase = 'failure' AND ended_at >= ?
              AND ended_at > coalesce((SELECT max(ended_at) FROM runs WHERE action = ? AND phase = 'success' AND ended_at IS NOT NULL), -1)
            """, [.text(action), .integer(from), .text(action)])?.int64 ?? 0)
        let recent = try connection.withStatement("""
            SELECT id, phase, ended_at - started_at FROM runs INDEXED BY runs_by_action
            WHERE action = ? AND phase IN ('success', 'failure', 'cancelled') AND ended_at >= ? ORDER BY id DESC LIMIT 20
            """) { statement -> [ActionStats.Recent] in
            try statement.bind([.text(action), .integer(from)])
            var list: [ActionStats.Recent] = []
            while try statement.step() {
                list.append(ActionStats.Recent(id: statement.int64(0) ?? 0, phase: Phase(rawValue: statement.string(1) ?? "") ?? .failure,
                                               duration: statement.int64(2)))
            }
            return list.reversed()
        }
        let usage = try connection.withStatement("""
            SELECT cpu_user + cpu_system, memory_peak FROM runs INDEXED BY runs_by_action_outcome
            WHERE action = ? AND phase IN ('success', 'failure', 'cancelled') AND ended_at >= ?
              AND (cpu_user IS NOT NULL OR memory_peak IS NOT NULL)
            """) { statement -> (cpu: [Int64], memory: [Int64]) in
            try statement.bind([.text(action), .integer(from)])
            var cpu: [Int64] = [], memory: [Int64] = []
            while try statement.step() {
                if let value = statement.int64(0) { cpu.append(value) }
                if let value = statement.int64(1) { memory.append(value) }
            }
            return (cpu, memory)
        }
        let success = counts[.success] ?? 0, failure = counts[.failure] ?? 0
        var stats = ActionStats(
            action: action, success: success, failure: failure, cancelled: counts[.cancelled] ?? 0,
            successRate: success + failure > 0 ? Double(success) / Double(success + failure) : nil,
            p50: ActionStats.nearestRank(durations, 50), p95: ActionStats.nearestRank(durations, 95), max: durations.last,
            lastSuccess: lastSuccess, lastFailure: try latest("failure"), failureStreak: failureStreak, recent: recent)
        stats.setUsage(cpu: usage.cpu, memory: usage.memory)
        return stats
    }
}
