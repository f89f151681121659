import BatonCore
import BatonStore
import Foundation

/// 7. Queries on a large history: the first page of the standard `history` filters.
enum HistoryBench {
    static let actions = ["backup", "deploy", "renew-certs", "build", "report", "sync", "index", "cleanup", "mail", "rotate"]

    static func run(runs: Int) throws -> [Figure] {
        let directory = scratchDirectory("history")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/history.sqlite"
        let generated = Stopwatch()
        try generate(path: path, runs: runs)
        let generation = generated.seconds

        let history = try History.openReadOnly(path: path)
        let now = Timestamp.now
        let week = Timestamp(microseconds: now.rawValue - 7 * 86_400_000_000)
        let filters: [(String, HistoryFilter)] = [
            ("all (newest 50)", HistoryFilter()),
            ("--action deploy", HistoryFilter(actions: ["deploy"])),
            ("--phase failure", HistoryFilter(phases: [.failure])),
            ("deploy --phase failure", HistoryFilter(actions: ["deploy"], phases: [.failure])),
            ("--since 7d", HistoryFilter(since: week)),
            ("deploy --since 7d --until 1d", HistoryFilter(actions: ["deploy"], since: week,
                                                           until: Timestamp(microseconds: now.rawValue - 86_400_000_000))),
            ("deploy --param env=prod", HistoryFilter(actions: ["deploy"], params: ["env": "prod"])),
        ]
        let repeats = 30
        // Baseline: the plainest page SQLite can give, by primary key.
        var baseline: [Double] = []
        for _ in 0..<repeats {
            let watch = Stopwatch()
            try history.connection.withStatement("SELECT * FROM runs ORDER BY id DESC LIMIT 50") { statement in
                while try statement.step() {}
            }
            baseline.append(watch.seconds * 1000)
        }
        let base = percentile(baseline, 50)
        var figures: [Figure] = [Figure("history: generated \(runs) runs (3 transitions each)", generation, "s")]
        for (name, filter) in filters {
            var samples: [Double] = []
            for _ in 0..<repeats {
                let watch = Stopwatch()
                _ = try history.runs(filter)
                samples.append(watch.seconds * 1000)
            }
            figures.append(Figure("history \(name): first page p50", percentile(samples, 50), "ms",
                                  baseline: ("raw SELECT … ORDER BY id DESC LIMIT 50, p50", base), lowerIsBetter: true,
                                  target: "< 10 ms"))
            figures.append(Figure("history \(name): first page p99", percentile(samples, 99), "ms"))
        }
        // stats for one action (a tenth of all runs), against counting that action's runs.
        var countSamples: [Double] = []
        var statsSamples: [Double] = []
        for _ in 0..<10 {
            var watch = Stopwatch()
            _ = try history.connection.scalar("SELECT count(*) FROM runs WHERE action = 'deploy'")
            countSamples.append(watch.seconds * 1000)
            watch = Stopwatch()
            _ = try history.stats(actions: ["deploy"])
            statsSamples.append(watch.seconds * 1000)
        }
        let countBase = percentile(countSamples, 50)
        figures.append(Figure("stats deploy (\(runs / actions.count) runs): p50", percentile(statsSamples, 50), "ms",
                              baseline: ("SELECT count(*) of that action, p50", countBase), lowerIsBetter: true, target: "< 300 ms"))
        figures.append(Figure("stats deploy: p99", percentile(statsSamples, 99), "ms"))
        return figures
    }

    /// Writes `runs` runs over the last 90 days, with 3 transitions each, 10 actions, 1 in 10 failed.
    static func generate(path: String, runs: Int) throws {
        try migrateFile(path)
        let connection = try Connection(path: path)
        try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF")
        let now = Timestamp.now.rawValue
        let span: Int64 = 90 * 86_400_000_000
        var generator = SplitMix(seed: 42)
        try connection.execute("BEGIN")
        for id in 1...Int64(runs) {
            let action = actions[Int(generator.next() % UInt64(actions.count))]
            let queued = now - span + span * id / Int64(runs)
            let duration = Int64(generator.next() % 60_000_000) + 1_000
            let failed = generator.next() % 10 == 0
            let phase = failed ? "failure" : "success"
            let env = generator.next() % 2 == 0 ? "prod" : "staging"
            try connection.cached("""
                INSERT INTO runs (id, action, key, phase, policy, params, trigger_uid, queued_at, started_at, ended_at, attempts,
                                  exit_code, reason, error)
                VALUES (?, ?, ?, ?, 'queue', ?, 0, ?, ?, ?, 1, ?, 'exit', ?)
                """) { statement in
                try statement.bind([.integer(id), .text(action), .text(action), .text(phase), .text(#"{"env":"\#(env)"}"#),
                                    .integer(queued), .integer(queued + 500), .integer(queued + 500 + duration),
                                    .integer(failed ? 1 : 0), failed ? .text("exited with status 1: something broke") : .null])
                _ = try statement.step()
            }
            for (seq, from, to, at) in [(1, nil, "queued", queued), (2, "queued", "loading", queued + 500),
                                        (3, "loading", phase, queued + 500 + duration)] as [(Int64, String?, String, Int64)] {
                try StoreBench.transition(connection, id, seq, from, to, at)
            }
            if id % 50_000 == 0 { try connection.execute("COMMIT; BEGIN") }
        }
        try connection.execute("COMMIT")
        try connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }
}

