import BatonCore
import BatonIPC
import Foundation
import Testing

/// Storms of each policy spread over three real batond hosts on one PostgreSQL database: exact
/// counts of what each trigger got, and no two runs of a key ever at once.
@Suite("End to end: policy storms across a fleet", .serialized, .offPool)
struct FleetStormTests {
    @Test("a storm of queue triggers spread over three hosts: every trigger answered with a run, no two runs of the key overlap")
    func queueStorm() throws {
        let log = NSTemporaryDirectory() + "baton-fleet-intervals-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: log) }
        let hosts = try FleetTests.fleet(3, actions: """
            step: { exec: ["sh", "-c", "echo start $(date +%s%N) $BATON_RUN_ID >> \\"$LOG\\"; sleep 0.05; echo end $(date +%s%N) $BATON_RUN_ID >> \\"$LOG\\""],
                    env: { LOG: "\(log)" }, policy: "queue" },
            """)
        let answers = Collected<Response>()
        inParallel(45) { index in
            if let answer = try? FleetTests.trigger(hosts[index % 3], "step") { answers.append(answer) }
        }
        let all = answers.all
        #expect(all.count == 45 && all.allSatisfy { $0.ok == true && $0.run != nil })
        let runs = Set(all.compactMap { $0.run?.id })
        let created = all.filter { $0.decision == .created || $0.decision == .followUp }
        #expect(created.count == runs.count)
        #expect(all.filter { $0.decision == .coalesced }.count == 45 - runs.count)
        for id in runs { #expect(try FleetTests.wait(hosts[Int(id) % 3], run: id)?.phase == .success) }
        // Every interval closes before the next opens: at most one run of the key at any time.
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ") }
        var open: Substring?
        for line in lines.sorted(by: { UInt64($0[1])! < UInt64($1[1])! }) {
            if line[0] == "start" {
                #expect(open == nil, "run \(line[2]) started while run \(open ?? "") was running")
                open = line[2]
            } else {
                #expect(open == line[2])
                open = nil
            }
        }
        #expect(lines.count == 2 * runs.count)
        // Every host answered a third of the triggers; the history on any of them has every run.
        let history = try JSONSerialization.jsonObject(with: Data(try hosts[2].baton("history", "--json").stdout.utf8)) as? [[String: Any]]
        #expect(Set((history ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value }) == runs)
    }

    @Test("reject and join storms spread over three hosts: one run each, exact counts, and join's callers all get its outcome")
    func rejectAndJoinStorms() throws {
        let gate = try FifoGate()
        let hosts = try FleetTests.fleet(3, actions: FleetTests.gated(gate))
        let rejected = Collected<Response>()
        inParallel(30) { index in if let answer = try? FleetTests.trigger(hosts[index % 3], "gated") { rejected.append(answer) } }
        let created = rejected.all.filter { $0.decision == .created }
        #expect(created.count == 1)
        #expect(rejected.all.filter { $0.error?.code == .busy }.count == 29)
        let id = try #require(created.first?.run?.id)
        // join: 30 waiting callers on three hosts share the run in flight and all hear how it ended
        let joined = Collected<Response>()
        let waiting = Thread { inParallel(30) { index in
            if let answer = try? FleetTests.trigger(hosts[index % 3], "gated", policy: .join, detach: false) { joined.append(answer) }
        } }
        waiting.start()
        try Eventually.until("the 30 joining callers' triggers recorded on run \(id)", within: 20) {
            try Client(path: hosts[0].socket).call(Request(op: .show, run: id)).detail?.triggers.count ?? 0 >= 59
        }
        gate.release()
        Eventually.until("the 30 joined callers answered: \(joined.all.count)", within: 20) { joined.all.count >= 30 }
        #expect(joined.all.count == 30)
        #expect(joined.all.allSatisfy { $0.run?.id == id && $0.run?.phase == .success }, "\(joined.all.map { "\($0.run?.id ?? -1) \($0.run?.phase.rawValue ?? "-")" })")
        let triggers = try Client(path: hosts[1].socket).call(Request(op: .show, run: id)).detail?.triggers ?? []
        #expect(triggers.count { $0.decision == .rejected } == 29 && triggers.count { $0.decision == .joined } == 30)
    }

    @Test("replace storm over three hosts: every trigger makes a run, each stops the one before, and no two ever overlap")
    func replaceStorm() throws {
        let directory = NSTemporaryDirectory() + "baton-fleet-replace-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hosts = try FleetTests.fleet(3, actions: """
            swap: { exec: ["flock", "-n", "\(directory)/lock", "sh", "-c", "echo start $BATON_RUN_ID >> \(directory)/log; sleep 0.3"],
                    policy: "replace", killGrace: "1s" },
            """)
        let answers = Collected<Response>()
        inParallel(15) { index in if let answer = try? FleetTests.trigger(hosts[index % 3], "swap") { answers.append(answer) } }
        let runs = answers.all.compactMap { $0.run?.id }.sorted()
        #expect(runs.count == 15 && Set(runs).count == 15)
        #expect(answers.all.filter { $0.decision == .replaced }.count == 14)
        let outcomes = try runs.map { try FleetTests.wait(hosts[Int($0) % 3], run: $0) }
        // The last run ends by itself; each one before is replaced, unless it ended by itself
        // just as its replacement was decided (on a loaded machine the 15 triggers take a while).
        #expect(outcomes.last??.phase == .success, "\(outcomes.map { $0?.phase.rawValue ?? "?" })")
        #expect(outcomes.dropLast().allSatisfy { $0?.phase == .success || ($0?.phase == .cancelled && $0?.reason == "replaced") },
                "\(outcomes.map { "\($0?.phase.rawValue ?? "?") \($0?.reason ?? "")" })")
        #expect(outcomes.filter { $0?.phase == .cancelled && $0?.reason == "replaced" }.count >= 10)
        // flock fails (exit 1, no "start") for a run that found the previous one still running.
        #expect(outcomes.allSatisfy { $0?.exitCode != 1 }, "a run found the key's previous run still running")
    }
}
