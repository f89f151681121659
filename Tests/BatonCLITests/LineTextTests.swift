@testable import baton
import BatonClient
import BatonCore
import Testing

/// How `baton status` shows a key's line of follow-ups (`queue: { depth: N }`): counted in the
/// state column, listed with their places under the rules.
@Suite("CLI: a key's line")
struct LineTextTests {
    static let context = Context(socketPath: "/tmp/none.sock", databasePath: nil, isTerminal: false, useColor: false)
    static let start = Timestamp(rawValue: 1_700_000_000_000_000)

    static func run(_ id: Int64, _ phase: Phase, ref: String, line: Int? = nil, queued seconds: Int = 0) -> RunSnapshot {
        var run = RunSnapshot(id: id, action: "deploy", key: "deploy", phase: phase, policy: .queue, params: ["ref": ref], trigger: nil,
                              queuedAt: Timestamp(rawValue: start.rawValue - Int64(seconds) * 1_000_000), startedAt: phase == .loading ? Timestamp(rawValue: start.rawValue - 5_000_000) : nil)
        run.line = line
        return run
    }

    @Test("status counts the runs in line and lists them in the order they start, with their params and ages")
    func status() {
        var deploy = ActionInfo(name: "deploy", description: nil, exec: ["x"], policy: .queue, policies: [], timeout: nil,
                                params: [:], keyParams: [],
                                inFlight: [Self.run(1, .loading, ref: "a"), Self.run(3, .queued, ref: "c", line: 2, queued: 3),
                                           Self.run(2, .queued, ref: "b", line: 1, queued: 12)], last: nil)
        deploy.queueDepth = 3
        let text = StatusCommand.text(BatonStatus(actions: [deploy]), context: Self.context, now: Self.start, width: 200)
        #expect(text.contains("loading 5.0s (run 1); 2 in line"), "\(text)")
        #expect(text.contains("deploy: line (3 at most): 1. run 2 ref=b, queued 12s ago; 2. run 3 ref=c, queued 3.0s ago"), "\(text)")
        #expect(StatusCommand.line(ActionInfo(name: "idle", description: nil, exec: [], policy: .queue, policies: [], timeout: nil,
                                              params: [:], keyParams: []), now: Self.start).isEmpty)
    }
}
