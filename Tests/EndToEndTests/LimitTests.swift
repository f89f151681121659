import BatonCore
import Foundation
import Testing

/// `limits` where this machine cannot enforce them: refused at start, at reload and by
/// `--check-config`, naming the action and the field with the reason; never run unlimited.
/// (Where it can, the same start succeeds: each test follows what `--check-config` found.)
@Suite("End to end: limits the kernel cannot enforce here are refused", .serialized, .offPool)
struct LimitTests {
    static let limited = #"big: { exec: ["true"], limits: { memory: "512M", tasks: 200, cpu: "50%" } }"#

    static func config(_ mode: ProcessTreeTests.Mode, actions: String) -> String {
        #"{ processTree: "\#(mode.rawValue)", actions: { plain: { exec: ["true"] }, \#(actions) } }"#
    }

    /// The fields `--check-config` says this machine cannot enforce, and its whole answer.
    static func unenforced(_ path: String) throws -> (fields: [String], check: Output) {
        let check = try execute(Binaries.batond, ["--check-config", path])
        let fields = ResourceLimits.Field.allCases.map(\.rawValue).filter { check.stdout.contains("  \($0): no: ") }
        return (fields, check)
    }

    @Test("a config whose limits cannot be enforced does not start batond; --check-config says which and why", arguments: ProcessTreeTests.Mode.allCases)
    func refusedAtStart(_ mode: ProcessTreeTests.Mode) throws {
        let directory = NSTemporaryDirectory() + "baton-limits-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/baton.json5"
        try Self.config(mode, actions: Self.limited).write(toFile: path, atomically: true, encoding: .utf8)
        let (fields, check) = try Self.unenforced(path)
        #expect(check.stdout.contains("limits this machine enforces: "), "\(check)")
        if mode == .processGroup {
            #expect(fields == ["memory", "tasks", "cpu"], "\(check)")
            #expect(check.stdout.contains("no run in a cgroup of its own"), "\(check)")
        }
        #expect((check.code == 0) == fields.isEmpty, "\(check)")
        for field in ["memory", "tasks", "cpu"] {
            #expect(check.stderr.contains("actions.big.limits.\(field): this machine cannot enforce it: ") == fields.contains(field), "\(check)")
        }
        // A machine that enforces them all would start (and serve); the refusal is what is tested.
        guard !fields.isEmpty else { return }
        // (Bounded: a batond that wrongly starts is stopped after 20 s, and the test fails.)
        let started = try execute("/usr/bin/timeout", ["20", Binaries.batond, "--config", path, "--socket", directory + "/s.sock",
                                                       "--database", directory + "/h.sqlite"])
        #expect(started.code != 0, "\(started)")
        #expect(started.stderr.contains("limits this machine cannot enforce"), "\(started)")
        for field in ["memory", "tasks", "cpu"] {
            let named = started.stderr.contains("actions.big.limits.\(field): this machine cannot enforce it: ")
            #expect(named == fields.contains(field), "\(field): \(started.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/s.sock"), "it never served")
    }

    @Test("a reload that adds limits this machine cannot enforce is refused, naming the field, and the old config stays")
    func refusedAtReload() throws {
        let daemon = try Daemon(config: Self.config(.processGroup, actions: #"other: { exec: ["true"] }"#))
        try Self.config(.processGroup, actions: Self.limited).write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let refused = try daemon.baton("reload")
        #expect(refused.code != 0)
        #expect(refused.stderr.contains("actions.big.limits.memory: this machine cannot enforce it"), "\(refused)")
        #expect(refused.stderr.contains("actions.big.limits.cpu"), "\(refused)")
        #expect(try daemon.baton("run", "big").code == 2, "the refused config's action is not there")
        #expect(try daemon.baton("run", "other").code == 0, "the old config stays")
    }
}
