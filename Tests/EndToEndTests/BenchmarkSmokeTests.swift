import BatonCore
import Foundation
import Testing

@Suite("The benchmark still runs", .offPool)
struct BenchmarkSmokeTests {
    @Test("baton-bench --quick runs every benchmark and writes every figure with its baseline (no timing is judged)")
    func quick() throws {
        let output = NSTemporaryDirectory() + "baton-bench-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try execute(Binaries.directory.appendingPathComponent("baton-bench").path, ["--quick", "--json", output])
        #expect(result.code == 0, "\(result.stdout)\n\(result.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect((object["failures"] as? [String])?.isEmpty == true)
        let figures = object["figures"] as? [[String: Any]] ?? []
        let names = figures.compactMap { $0["name"] as? String }
        for prefix in ["store:", "end to end:", "spawn:", "socket: ping", "socket: status", "single flight:", "latency:",
                       "history", "stats ", "memory:", "cli:", "output through batond:", "output follower:", "trigger → end of /bin/true while"] {
            #expect(names.contains { $0.hasPrefix(prefix) }, "no figure for \(prefix)")
        }
        #expect(names.contains { $0.contains("→ 1 run(s)") }, "single flight gave more than one run: \(names)")
        for figure in figures where figure["baselineName"] != nil {
            #expect((figure["baseline"] as? Double ?? 0) > 0, "\(figure)")
            #expect((figure["ratio"] as? Double ?? 0) > 0, "\(figure)")
        }
    }
}

@Suite("The benchmark says whether batond uses the shim", .offPool)
struct BenchmarkShimTests {
    /// Whether /dev/shm is a tmpfs here (where baton-bench's default runtime directory goes).
    static var devShmIsTmpfs: Bool {
        let lines = ((try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? "").split(separator: "\n")
        return lines.contains { $0.split(separator: " ").dropFirst(4).first == "/dev/shm" && $0.contains(" - tmpfs ") }
    }

    @Test("--shim none and --shim PATH: batond copied alone or beside that shim, and the figure says which, from batond's log",
          arguments: [("none", 0.0), ("shim", 1.0)])
    func shim(choice: String, expected: Double) throws {
        let output = NSTemporaryDirectory() + "baton-bench-shim-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let shim = choice == "none" ? "none" : Binaries.directory.appendingPathComponent("baton-shim").path
        let result = try execute(Binaries.directory.appendingPathComponent("baton-bench").path,
                                 ["--only", "batond", "--parallelism", "2", "--runs", "40", "--shim", shim, "--json", output])
        // Where the package is installed batond finds its shim anyway: the bench refuses to call that "none".
        if choice == "none", FileManager.default.isExecutableFile(atPath: "/usr/libexec/baton/baton-shim") {
            #expect(result.code != 0 && result.stdout.contains("--shim none, but batond runs its actions under"), "\(result.stdout)")
            return
        }
        #expect(result.code == 0, "\(result.stdout)\n\(result.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let figures = object["figures"] as? [[String: Any]] ?? []
        let figure = try #require(figures.first { ($0["name"] as? String)?.hasPrefix("real batond: actions under baton-shim") == true })
        #expect(figure["value"] as? Double == expected, "\(figure)")
        if expected == 1 { #expect((figure["note"] as? String)?.contains("/bin/baton-shim, its directories in ") == true, "\(figure)") }
        // By default batond is given a runtime directory on a tmpfs, as the service is (/run/baton).
        if expected == 1, Self.devShmIsTmpfs {
            #expect((figure["note"] as? String)?.contains("-runtime/shims-") == true, "\(figure)")
            #expect((figure["note"] as? String)?.contains("(tmpfs at /dev/shm)") == true, "\(figure)")
        }
    }
}

@Suite("The fleet benchmark still runs", .offPool)
struct FleetBenchmarkSmokeTests {
    @Test("baton-bench --quick --only fleet measures 1 and 3 hosts against pgbench on a real server (no timing is judged)")
    func fleet() throws {
        let conninfo = try Postgres.server().database()
        let output = NSTemporaryDirectory() + "baton-bench-fleet-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let result = try execute(Binaries.directory.appendingPathComponent("baton-bench").path,
                                 ["--quick", "--only", "fleet", "--fleet", conninfo, "--json", output])
        #expect(result.code == 0, "\(result.stdout)\n\(result.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let figures = object["figures"] as? [[String: Any]] ?? []
        for name in ["fleet, 1 host: triggers/s", "fleet, 1 host: /bin/true runs/s", "fleet, 3 hosts: triggers/s", "fleet, 3 hosts: /bin/true runs/s"] {
            let figure = figures.first { ($0["name"] as? String)?.hasPrefix(name) == true }
            #expect(figure != nil, "no figure \(name)")
            #expect((figure?["baseline"] as? Double ?? 0) > 0 && (figure?["value"] as? Double ?? 0) > 0, "\(String(describing: figure))")
        }
    }
}
