import BatonCore
import Foundation
import Testing

/// What a run's processes used, measured end to end against a known burn: each attempt's CPU
/// time and peak memory in its transition, the run's figures (CPU summed, memory the largest) in
/// `history --json`, `show --json` and `stats`, from batond and from the file with batond down.
@Suite("End to end: a run's CPU time and peak memory", .serialized, .offPool)
struct UsageTests {
    /// Burns at least 0.3 s of CPU (by the process's own CPU clock, whatever the machine's load)
    /// and touches 100 MiB; fails the first time (no mark yet), succeeds the second.
    static let burn = """
        import os, sys, time
        start = time.process_time()
        while time.process_time() - start < 0.3: pass
        block = b'x' * (100 << 20)
        first = not os.path.exists(sys.argv[1])
        open(sys.argv[1], 'w').close()
        sys.exit(3 if first else 0)
        """

    static func config(_ mode: ProcessTreeTests.Mode, mark: String) -> String {
        """
        { processTree: "\(mode.rawValue)",
          actions: { burn: { exec: ["/usr/bin/python3", "-c", \(String(reflecting: burn)), "\(mark)"], retry: { attempts: 1, backoff: "10ms" } } } }
        """
    }

    static func json(_ output: Output) throws -> Any {
        try JSONSerialization.jsonObject(with: Data(output.stdout.utf8))
    }

    @Test("a known burn is recorded per attempt and per run, in show, history and stats", arguments: ProcessTreeTests.Mode.allCases)
    func knownBurn(_ mode: ProcessTreeTests.Mode) throws {
        let mark = NSTemporaryDirectory() + "baton-burn-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: mark) }
        let daemon = try Daemon(config: Self.config(mode, mark: mark))
        let run = try daemon.baton("run", "burn")
        #expect(run.code == 0, "\(run)")

        let shown = try JSONDecoder().decode(RunDetail.self, from: Data(try daemon.baton("show", "1", "--json").stdout.utf8))
        let ends = shown.transitions.filter { $0.from == .loading }.map(\.detail)
        #expect(ends.count == 2)
        for detail in ends {
            let cpu = (detail.cpuUser ?? 0) + (detail.cpuSystem ?? 0)
            #expect(cpu >= 200_000 && cpu < 30_000_000, "an attempt burnt ≥ 0.3 s of CPU: \(detail)")
            #expect((detail.memoryPeak ?? 0) >= 80 << 20 && (detail.memoryPeak ?? 0) < 1 << 30, "an attempt touched 100 MiB: \(detail)")
        }
        let figures = shown.run
        #expect(figures.cpuUser == ends.compactMap(\.cpuUser).reduce(0, +))
        #expect(figures.cpuSystem == ends.compactMap(\.cpuSystem).reduce(0, +))
        #expect(figures.memoryPeak == ends.compactMap(\.memoryPeak).max())
        #expect(try daemon.baton("show", "1").stdout.contains("used: cpu "))

        let history = try Self.json(try daemon.baton("history", "--json")) as? [[String: Any]] ?? []
        let row = try #require(history.first)
        #expect(row["cpuUser"] as? Int == figures.cpuUser.map(Int.init))
        #expect(row["cpuSystem"] as? Int == figures.cpuSystem.map(Int.init))
        #expect(row["memoryPeak"] as? Int == figures.memoryPeak.map(Int.init))

        let stats = try #require(try Self.json(try daemon.baton("stats", "--json")) as? [[String: Any]]).first ?? [:]
        let cpu = Int((figures.cpuUser ?? 0) + (figures.cpuSystem ?? 0))
        #expect(stats["cpuP50"] as? Int == cpu && stats["cpuP95"] as? Int == cpu, "\(stats)")
        #expect(stats["memoryP50"] as? Int == figures.memoryPeak.map(Int.init), "\(stats)")

        let table = try daemon.baton("stats").stdout
        #expect(table.contains("CPU P50/P95") && table.contains(" MiB/"), "\(table)")

        // The same from the file, with batond down.
        daemon.stop()
        let offline = try execute(Binaries.baton, ["--database", daemon.database, "history", "--json"])
        #expect((try Self.json(offline) as? [[String: Any]])?.first?["memoryPeak"] as? Int == figures.memoryPeak.map(Int.init))
    }

    @Test("in a fleet, PostgreSQL's runs carry the same figures: the sum and the max of the attempts', and stats' percentiles")
    func fleet() throws {
        let mark = NSTemporaryDirectory() + "baton-burn-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: mark) }
        let hosts = try FleetTests.fleet(1, actions: """
            burn: { exec: ["/usr/bin/python3", "-c", \(String(reflecting: Self.burn)), "\(mark)"], retry: { attempts: 1, backoff: "10ms" } },
            """)
        let run = try hosts[0].baton("run", "burn")
        #expect(run.code == 0, "\(run)")
        let shown = try JSONDecoder().decode(RunDetail.self, from: Data(try hosts[0].baton("show", "1", "--json").stdout.utf8))
        let ends = shown.transitions.filter { $0.from == .loading }.map(\.detail)
        #expect(ends.count == 2)
        #expect(ends.allSatisfy { ($0.memoryPeak ?? 0) >= 80 << 20 }, "\(ends)")
        #expect(shown.run.cpuUser != nil && shown.run.cpuUser == ends.compactMap(\.cpuUser).reduce(0, +))
        #expect(shown.run.cpuSystem == ends.compactMap(\.cpuSystem).reduce(0, +))
        #expect(shown.run.memoryPeak == ends.compactMap(\.memoryPeak).max())
        let history = try Self.json(try hosts[0].baton("history", "--json")) as? [[String: Any]] ?? []
        #expect(history.first?["memoryPeak"] as? Int == shown.run.memoryPeak.map(Int.init))
        let stats = try #require(try Self.json(try hosts[0].baton("stats", "--json")) as? [[String: Any]]).first ?? [:]
        #expect(stats["cpuP95"] as? Int == Int((shown.run.cpuUser ?? 0) + (shown.run.cpuSystem ?? 0)), "\(stats)")
        #expect(stats["memoryP50"] as? Int == shown.run.memoryPeak.map(Int.init), "\(stats)")
    }
}
