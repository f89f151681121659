@testable import BatonCore
@testable import BatonEngine
import Foundation
import Testing

@Suite("Killing what a crashed daemon's runs left", .offPool)
struct KillUntilGoneTests {
    /// A shell tagged as run 1 of `instance` that starts `count` sleeps, each tagged too.
    static func tagged(_ instance: String, count: Int, then: String = "wait") throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "i=0; while [ $i -lt \(count) ]; do sleep 300 & i=$((i + 1)); done; \(then)"]
        process.environment = ["PATH": "/usr/bin:/bin", "BATON_INSTANCE": instance, "BATON_RUN_ID": "1"]
        try process.run()
        return process
    }

    static func waitUntil(_ instance: String, finds count: Int) {
        Eventually.until("\(count) processes tagged \(instance) run 1", within: 30) { TaggedProcesses.find(instance: instance, runs: [1]).count >= count }
    }

    @Test("every tagged process is gone when it returns, not just signalled, and each is counted once")
    func goneOnReturn() throws {
        let instance = "kill-test-\(UUID().uuidString)"
        let shell = try Self.tagged(instance, count: 60)
        Self.waitUntil(instance, finds: 61)
        #expect(TaggedProcesses.find(instance: instance, runs: [1]).count == 61)
        let killed = TaggedProcesses.killUntilGone(instance: instance, runs: [1])
        // A single round of SIGKILLs returned while most of the 61 were still listed, dying.
        #expect(TaggedProcesses.find(instance: instance, runs: [1]).isEmpty)
        #expect(killed == 61)
        shell.waitUntilExit()
    }

    @Test("a process that forks as it is killed: its children, found by the next look, are killed too")
    func forksMeanwhile() throws {
        let instance = "kill-test-\(UUID().uuidString)"
        // The shell forks a new sleep every few milliseconds for as long as it lives.
        let shell = try Self.tagged(instance, count: 1, then: "while :; do sleep 300 & sleep 0.002; done")
        Self.waitUntil(instance, finds: 5)
        TaggedProcesses.killUntilGone(instance: instance, runs: [1])
        #expect(TaggedProcesses.find(instance: instance, runs: [1]).isEmpty)
        shell.waitUntilExit()
    }

    @Test("other runs' and other instances' processes are left alone")
    func onlyItsOwn() throws {
        let instance = "kill-test-\(UUID().uuidString)", other = "kill-test-\(UUID().uuidString)"
        let mine = try Self.tagged(instance, count: 2), theirs = try Self.tagged(other, count: 2)
        Self.waitUntil(instance, finds: 3)
        Self.waitUntil(other, finds: 3)
        TaggedProcesses.killUntilGone(instance: instance, runs: [1])
        #expect(TaggedProcesses.find(instance: other, runs: [1]).count == 3)
        #expect(TaggedProcesses.killUntilGone(instance: instance, runs: [2]) == 0)
        TaggedProcesses.killUntilGone(instance: other, runs: [1])
        mine.waitUntilExit()
        theirs.waitUntilExit()
    }
}
