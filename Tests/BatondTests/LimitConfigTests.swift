@testable import batond
import BatonCore
import Foundation
import Testing

/// `limits` in the config: read, refused when malformed, and refused when this machine cannot
/// enforce them, each problem naming the action and the field.
@Suite("Config: limits")
struct LimitConfigTests {
    @Test("limits are read into the action")
    func read() throws {
        let config = try Config.parse(Data(#"{ actions: { big: { exec: ["x"], limits: { memory: "512M", tasks: 200, cpu: "50%" } }, small: { exec: ["y"] } } }"#.utf8), file: "t")
        #expect(config.actions.first { $0.name == "big" }?.limits == ResourceLimits(memory: 536_870_912, tasks: 200, cpu: 50))
        #expect(config.actions.first { $0.name == "small" }?.limits.isEmpty == true)
    }

    @Test("a malformed limit names its field", arguments: [
        (#"{ memory: "lots" }"#, #"actions.a.limits.memory: expected a size of at least 4K such as "512M""#),
        (#"{ memory: 512 }"#, "actions.a.limits.memory: expected a string"),
        (#"{ tasks: 0 }"#, "actions.a.limits.tasks: expected a whole number from 1 to 4194304, got 0"),
        (#"{ tasks: "200" }"#, "actions.a.limits.tasks: expected a whole number"),
        (#"{ cpu: "50" }"#, #"actions.a.limits.cpu: expected a share of one CPU from 1% to 100000% such as "50%""#),
        (#"{ swap: "1G" }"#, "actions.a.limits.swap: unknown field"),
        (#""512M""#, "actions.a.limits: expected an object"),
    ])
    func malformed(_ limits: String, _ expected: String) {
        let found = problems(#"{ actions: { a: { exec: ["x"], limits: "# + limits + " } } }")
        #expect(found.count == 1 && found.first?.hasPrefix(expected) == true, "\(found)")
    }

    @Test("limits this machine cannot enforce are refused, naming action and field with the reason; the others pass")
    func unenforceable() throws {
        let config = try Config.parse(Data("""
            { actions: { big: { exec: ["x"], limits: { memory: "512M", tasks: 200, cpu: "50%" } },
                         forks: { exec: ["y"], limits: { tasks: 5 } }, plain: { exec: ["z"] } } }
            """.utf8), file: "t")
        let support = LimitSupport(controllers: ["pids"], missing: ["memory": "memory is on cgroup v1", "cpu": "cpu is on cgroup v1"])
        #expect(config.limitProblems(support).map { "\($0.path): \($0.message)" } == [
            "actions.big.limits.memory: this machine cannot enforce it: memory is on cgroup v1",
            "actions.big.limits.cpu: this machine cannot enforce it: cpu is on cgroup v1",
        ])
        #expect(throws: ConfigError.self) { try config.checkLimits(support, file: "t") }
        let everything = LimitSupport(controllers: ["memory", "pids", "cpu"])
        #expect(config.limitProblems(everything).isEmpty)
        let none = ProcessTracking.processGroup.limitSupport
        #expect(config.limitProblems(none).map(\.path) == ["actions.big.limits.memory", "actions.big.limits.tasks",
                                                           "actions.big.limits.cpu", "actions.forks.limits.tasks"])
        #expect(config.limitProblems(none).allSatisfy { $0.message.contains("no run in a cgroup of its own") })
    }
}
