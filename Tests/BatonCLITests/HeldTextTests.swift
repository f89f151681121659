@testable import baton
import BatonClient
import BatonCore
import Testing

/// How `baton status` shows the runs a held pause (`pause --hold`) keeps queued: each run once,
/// a run with a reason of its own (approval, needs, a lock, a debounce) on its own line with the
/// pause's beside it.
@Suite("CLI: runs held by a pause")
struct HeldTextTests {
    static let context = LineTextTests.context
    static let start = LineTextTests.start

    @Test("a held run that also waits for approval is listed once, saying both; the others held are listed together")
    func once() {
        var approving = LineTextTests.run(5, .queued, ref: "a")
        approving.approval = ApprovalState(by: ["group:ops"], until: nil)
        let plain = LineTextTests.run(6, .queued, ref: "b")
        var deploy = ActionInfo(name: "deploy", description: nil, exec: ["x"], policy: .queue, policies: [], timeout: nil,
                                params: [:], keyParams: ["ref"], inFlight: [approving, plain], last: nil)
        deploy.paused = ActionPause(action: "deploy", by: "alice", reason: "migrating db", at: Self.start, hold: true)
        let text = StatusCommand.text(BatonStatus(actions: [deploy]), context: Self.context, now: Self.start, width: 300)
        #expect(text.contains("queued (run 5) waiting for approval by group:ops, held by pause (alice: migrating db) until resumed"), "\(text)")
        #expect(text.contains("queued (run 6) held by pause (alice: migrating db) until resumed"), "\(text)")
        #expect(text.ranges(of: "run 5").count == 1 && !text.contains("runs 5"), "run 5 is listed once: \(text)")
    }

    @Test("history --events says paused (hold) for a pause that held its triggers, paused for one that refused them")
    func events() {
        let table = HistoryCommand.eventsTable([ActionEvent(action: "deploy", event: .paused, by: "alice", reason: "db", at: Self.start, hold: true),
                                                ActionEvent(action: "backup", event: .paused, by: "bob", reason: "disk", at: Self.start)],
                                               utc: true, width: 200)
        let lines = table.split(separator: "\n").map(String.init)
        #expect(lines.count == 3 && lines[1].contains("deploy  paused (hold)") && lines[2].contains("backup  paused  "), "\(table)")
    }
}
