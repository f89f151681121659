import BatonCore
import Foundation
import Testing

@Suite("The benchmark still runs")
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
                       "history", "stats ", "memory:", "cli:"] {
            #expect(names.contains { $0.hasPrefix(prefix) }, "no figure for \(prefix)")
        }
        #expect(names.contains { $0.contains("→ 1 run(s)") }, "single flight gave more than one run: \(names)")
        for figure in figures where figure["baselineName"] != nil {
            #expect((figure["baseline"] as? Double ?? 0) > 0, "\(figure)")
            #expect((figure["ratio"] as? Double ?? 0) > 0, "\(figure)")
        }
    }
}
