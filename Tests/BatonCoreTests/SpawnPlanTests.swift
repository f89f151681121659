@testable import BatonProcess
@testable import BatonEngine
import Foundation
import Testing

/// The spawn plan gives an attempt the environment `ExecRunner.environment(for:)` says, with the
/// run's own variables over the action's fixed ones, and is made once per action config.
@Suite("Spawn plan")
struct SpawnPlanTests {
    static let runner = ExecRunner(inherited: ["PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8"], spawner: SpawnerPool(threads: 1))

    /// What `plan` gives, read back: the argv, and the environment as `NAME=VALUE` strings in order.
    static func spawned(_ plan: SpawnPlan, prefix: [String], own: [(name: String, value: String?)]) -> (argv: [String], env: [String]) {
        func strings(_ array: UnsafePointer<UnsafePointer<CChar>?>) -> [String] {
            var found: [String] = []
            var index = 0
            while let pointer = array[index] {
                found.append(String(cString: pointer))
                index += 1
            }
            return found
        }
        return plan.withPointers(prefix: prefix, own: own) { (strings($0), strings($1)) }
    }

    static func dictionary(_ env: [String]) -> [String: String] {
        Dictionary(env.map { line in
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), String(parts[1]))
        }, uniquingKeysWith: { first, _ in first })
    }

    @Test("the environment and argv are the per-run dictionary's, whatever the action's env sets again or a hook adds")
    func sameAsEnvironment() throws {
        var action = Action(name: "deploy", exec: ["/bin/echo", "a b", ""])
        action.env = ["TZ": "UTC", "BATON_PARAM_HOST": "from env", "BATON_HOOK_OUTPUT": "from env", "BATON_ACTION": "x", "LANG": "fr"]
        let run = RunSnapshot(id: 9, action: "build", key: "build", phase: .failure, policy: .queue, params: ["branch": "main"], trigger: nil,
                              queuedAt: Timestamp(rawValue: 1_000_000_000))
        let hook = HookContext(cause: HookCause(run: 9, action: "build", event: .failure), run: run, output: [])
        for (hooked, artifacts) in [(false, nil), (true, "/var/lib/baton/artifacts/42-2")] as [(Bool, String?)] {
            let job = Job(runID: 42, action: action, attempt: 2, params: ["host": "web1", "port": "80"], instance: "i-1",
                          hook: hooked ? hook : nil)
            var state = SpawnerState()
            let plan = state.plan(Self.runner.planInputs(job)) { Self.runner.fixedEnvironment(job.action, instance: job.instance) }
            var own = Self.runner.ownVariables(job, artifacts: artifacts)
            own.append(("BATON_HOOK_OUTPUT", hooked ? "/tmp/out" : nil))
            let made = Self.spawned(plan, prefix: ["shim", "dir"], own: own)
            var expected = Self.runner.environment(for: job)
            expected["BATON_ARTIFACTS"] = artifacts ?? expected["BATON_ARTIFACTS"]
            expected["BATON_HOOK_OUTPUT"] = hooked ? "/tmp/out" : nil
            #expect(made.argv == ["shim", "dir", "/bin/echo", "a b", ""])
            #expect(Set(made.env.map { $0.prefix { $0 != "=" } }).count == made.env.count)
            #expect(Self.dictionary(made.env) == expected)
            #expect(expected["BATON_PARAM_HOST"] == "web1" && expected["BATON_ACTION"] == "deploy" && expected["TZ"] == "UTC")
        }
    }

    @Test("a name a run sets twice keeps its last value")
    func lastWins() {
        let job = Job(runID: 1, action: Action(name: "t", exec: ["/bin/true"]), attempt: 1, params: [:])
        var state = SpawnerState()
        let plan = state.plan(Self.runner.planInputs(job)) { Self.runner.fixedEnvironment(job.action, instance: nil) }
        let made = Self.spawned(plan, prefix: [], own: [("BATON_PARAM_K", "a"), ("BATON_PARAM_K", "b"), ("BATON_ACTION", nil)])
        #expect(made.env.filter { $0.hasPrefix("BATON_PARAM_K=") } == ["BATON_PARAM_K=b"])
        #expect(!made.env.contains { $0.hasPrefix("BATON_ACTION=") })
        #expect(made.argv == ["/bin/true"])
        // Past 16 variables, the last of each name found by name.
        var many: [(name: String, value: String?)] = (0..<40).map { ("BATON_PARAM_P\($0 % 20)", String($0)) }
        many.append(("BATON_PARAM_P3", nil))
        let env = Self.spawned(plan, prefix: [], own: many).env.filter { $0.hasPrefix("BATON_PARAM_") }
        #expect(Set(env) == Set((20..<40).filter { $0 != 23 }.map { "BATON_PARAM_P\($0 % 20)=\($0)" }) && env.count == 19)
    }

    @Test("a plan is made once per action config: kept while it is the same, made again when it changes")
    func madeOnce() {
        var action = Action(name: "t", exec: ["/bin/true"])
        var state = SpawnerState()
        var made = 0
        func plan() -> SpawnPlan {
            let job = Job(runID: Int64(made + 1), action: action, attempt: 1, params: ["k": "v"])
            return state.plan(Self.runner.planInputs(job)) {
                made += 1
                return Self.runner.fixedEnvironment(job.action, instance: nil)
            }
        }
        let first = plan()
        #expect(plan() === first && made == 1)
        action.env = ["A": "1"]
        let second = plan()
        #expect(second !== first && made == 2 && Self.dictionary(Self.spawned(second, prefix: [], own: []).env)["A"] == "1")
        action.exec = ["/bin/false"]
        #expect(Self.spawned(plan(), prefix: [], own: []).argv == ["/bin/false"] && made == 3)
    }

    @Test("run as another user, with a hook, params, artifacts and an env that sets Baton's names: the old code's environment, written out")
    func literalEnvironment() {
        var action = Action(name: "deploy", exec: ["/bin/true"])
        action.runAs = RunAs(named: "app", user: "app", uid: 1_000, gid: 1_000, groups: [1_000], home: "/home/app", shell: "/bin/sh")
        action.env = ["TZ": "UTC", "HOME": "/srv", "BATON_RUN_ID": "env", "BATON_PARAM_HOST": "env", "BATON_HOOK_OUTPUT": "env",
                      "BATON_ACTION": "env", "BATON_ARTIFACTS": "env"]
        let run = RunSnapshot(id: 9, action: "build", key: "build", phase: .failure, policy: .queue, params: ["branch": "main"], trigger: nil,
                              queuedAt: Timestamp(rawValue: 1_000_000_000))
        let hook = HookContext(cause: HookCause(run: 9, action: "build", event: .failure), run: run, output: [])
        let job = Job(runID: 42, action: action, attempt: 2, params: ["host": "web1"], instance: "i-1", hook: hook)
        var state = SpawnerState()
        let plan = state.plan(Self.runner.planInputs(job)) { Self.runner.fixedEnvironment(job.action, instance: job.instance) }
        var own = Self.runner.ownVariables(job, artifacts: "/var/lib/baton/artifacts/42-2")
        own.append(("BATON_HOOK_OUTPUT", nil))
        let made = Self.spawned(plan, prefix: [], own: own).env
        #expect(Set(made.map { $0.prefix { $0 != "=" } }).count == made.count)
        #expect(Self.dictionary(made) == [
            "HOME": "/srv", "USER": "app", "LOGNAME": "app", "SHELL": "/bin/sh", "LANG": "C.UTF-8", "TZ": "UTC",
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "BATON_ACTION": "deploy", "BATON_PROGRESS_FD": "3", "BATON_INSTANCE": "i-1", "BATON_RUN_ID": "42", "BATON_ATTEMPT": "2",
            "BATON_ARTIFACTS": "/var/lib/baton/artifacts/42-2", "BATON_PARAM_HOST": "web1",
            "BATON_HOOK_RUN_ID": "9", "BATON_HOOK_ACTION": "build", "BATON_HOOK_KEY": "build", "BATON_HOOK_PHASE": "failure",
            "BATON_HOOK_EVENT": "failure", "BATON_HOOK_REASON": "", "BATON_HOOK_EXIT_CODE": "", "BATON_HOOK_ERROR": "",
            "BATON_HOOK_PARAM_BRANCH": "main",
        ])
    }

    @Test("a run's own name that is not Baton's still replaces the fixed variable of that name, once")
    func ownNameNotBatons() {
        var action = Action(name: "t", exec: ["/bin/true"])
        action.env = ["TMPDIR": "/tmp"]
        let job = Job(runID: 1, action: action, attempt: 1, params: [:])
        var state = SpawnerState()
        let plan = state.plan(Self.runner.planInputs(job)) { Self.runner.fixedEnvironment(job.action, instance: nil) }
        let made = Self.spawned(plan, prefix: [], own: [("TMPDIR", "/run/t"), ("PATH", nil)]).env
        #expect(made.filter { $0.hasPrefix("TMPDIR=") } == ["TMPDIR=/run/t"])
        #expect(!made.contains { $0.hasPrefix("PATH=") })
    }

    @Test("the plans of actions no longer spawned go at a sweep: a removed action's plan is not kept")
    func removedGo() {
        var state = SpawnerState()
        func spawn(_ name: String) -> SpawnPlan {
            let job = Job(runID: 1, action: Action(name: name, exec: ["/bin/true"]), attempt: 1, params: [:])
            return state.plan(Self.runner.planInputs(job)) { Self.runner.fixedEnvironment(job.action, instance: nil) }
        }
        let kept = spawn("kept")
        _ = spawn("removed")
        for index in 0..<(2 * SpawnerState.sweep) {
            if index % 100 == 0 { #expect(spawn("kept") === kept) }
            _ = spawn("other")
        }
        #expect(state.plans["removed"] == nil && state.plans["kept"] === kept && state.plans.count == 2)
    }
}
