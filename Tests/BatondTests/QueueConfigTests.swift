@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: queue depth")
struct QueueConfigTests {
    @Test("queue: { depth: N } sets the line's depth; alone it makes the policy queue; policy: queue alone keeps a line of one")
    func parsed() throws {
        let config = try Config.parse(Data(#"""
            { actions: { deploy: { exec: ["true"], queue: { depth: 50 } }, old: { exec: ["true"], policy: "queue" },
                         chosen: { exec: ["true"], policy: "reject", policies: ["queue"], queue: { depth: 3 } },
                         plain: { exec: ["true"] } } }
            """#.utf8), file: "t.json5")
        let action = { (name: String) in config.actions.first { $0.name == name } }
        #expect(action("deploy")?.policy == .queue && action("deploy")?.queueDepth == 50)
        #expect(action("old")?.policy == .queue && action("old")?.queueDepth == 1)
        #expect(action("chosen")?.policy == .reject && action("chosen")?.queueDepth == 3)
        #expect(action("plain")?.policy == .reject && action("plain")?.queueDepth == 1)
    }

    @Test("a bad queue is refused naming its field and what was wrong",
          arguments: [
              ("queue: { depth: 0 }", "actions.d.queue.depth: expected a whole number from 1 to 1000, got 0"),
              ("queue: { depth: 2.5 }", "actions.d.queue.depth: expected a whole number from 1 to 1000, got 2.5"),
              ("queue: { depth: 3, size: 4 }", "actions.d.queue.size: unknown field (known: depth)"),
              (#"policy: "join", queue: { depth: 3 }"#,
               "actions.d.queue: applies to the queue policy, which this action neither has (policy: join) nor lets a trigger choose (policies)"),
              (#"queue: { depth: 3 }, debounce: "5s""#,
               "actions.d.queue.depth: a line of more than one cannot be debounced (debounce: a trigger shares the pending run whatever its params); use depth 1, or no debounce"),
          ])
    func refused(fields: String, problem: String) {
        #expect(problems(#"{ actions: { d: { exec: ["true"], "# + fields + " } } }") == [problem])
    }

    @Test("the fingerprint changes with the depth, and an action with a line of one keeps the one it had")
    func fingerprint() {
        var action = Action(name: "deploy", exec: ["true"], policy: .queue)
        let before = action.fingerprint
        action.queueDepth = 1
        #expect(action.fingerprint == before)
        action.queueDepth = 5
        #expect(action.fingerprint != before)
    }
}
