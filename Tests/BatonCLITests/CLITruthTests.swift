import BatonClient
import BatonCore
import BatonIPC
@testable import baton
import Foundation
import Testing

/// Issue 37, items 9, 16 and 18: what the CLI says is whole and true.
@Suite("CLI truths: uncut tables, suggestions, Ctrl-C, replace, how to start batond")
struct CLITruthTests {
    static let plain = Context(socketPath: "/tmp/none.sock", databasePath: nil, isTerminal: false, useColor: false)

    @Test("a table with no width (stdout not a terminal) cuts nothing; with one, its last column is cut", arguments: [
        (nil as Int?, "A  B\nx  a cell longer than any terminal would show in a column of its own, whole\n"),
        (30, "A  B\nx  a cell longer than any ter…\n"),
        (10, "A  B\nx  a cell …\n"),
    ])
    func width(width: Int?, expected: String) {
        let table = Format.table(["A", "B"], [["x", "a cell longer than any terminal would show in a column of its own, whole"]], width: width)
        #expect(table == expected)
    }

    @Test("stats through a pipe: the streak and every column whole (it was `7 faili…`)")
    func statsWhole() {
        var stats = ActionStats(action: "nightly-report", success: 120, failure: 7, successRate: 0.94, p50: 61_000_000, p95: 3_600_000_000,
                                max: 7_200_000_000, lastSuccess: Timestamp(rawValue: 1_000_000), lastFailure: Timestamp(rawValue: 2_000_000),
                                failureStreak: 7)
        stats.cpuP50 = 1_000_000; stats.cpuP95 = 90_000_000; stats.memoryP50 = 100 << 20; stats.memoryP95 = 2 << 30
        let now = Timestamp(rawValue: 100_000_000_000)
        let piped = StatsCommand.table([stats], context: Self.plain, now: now, width: nil)
        #expect(!piped.contains("…") && piped.contains("7 failing"), "\(piped)")
        #expect(StatsCommand.table([stats], context: Self.plain, now: now, width: 100).contains("…"))
    }

    @Test("an unknown option of a command names the closest, and where the list is", arguments: [
        (["--polcy", "replace"], "baton run: unknown option --polcy", #"did you mean "--policy"? (baton run --help lists them)"#),
        (["--detatch"], "baton run: unknown option --detatch", #"did you mean "--detach"? (baton run --help lists them)"#),
        (["--socekt", "/s"], "baton run: unknown option --socekt", #"did you mean "--socket"? (baton run --help lists them)"#),
        (["--zzz"], "baton run: unknown option --zzz", "baton run --help"),
    ])
    func unknownOption(arguments: [String], message: String, hint: String) throws {
        #expect(throws: UsageError(message, hint: hint)) { try RunCommand.spec.parse(["deploy"] + arguments) }
    }

    @Test("a --policy that is no policy suggests the close one")
    func policyTypo() throws {
        let parsed = try RunCommand.spec.parse(["deploy", "--policy", "replce"])
        #expect(throws: UsageError("baton run: --policy expects reject, join, queue or replace, got replce", hint: #"did you mean "replace"?"#)) {
            try RunCommand.run(parsed, Self.plain)
        }
    }

    @Test("a usage error prints its Try: line, `baton --help` by default")
    func usageText() {
        #expect(errorText(UsageError("unknown command stauts", hint: #"did you mean "status"?"#)) == ("Error: unknown command stauts\nTry: did you mean \"status\"?\n", 2))
        #expect(errorText(UsageError("baton help: unknown command nosuch")) == ("Error: baton help: unknown command nosuch\nTry: baton --help\n", 2))
    }

    static func run(_ id: Int64, _ phase: Phase) -> RunSnapshot {
        RunSnapshot(id: id, action: "deploy", key: "deploy", phase: phase, policy: .replace, params: [:], trigger: Peer(uid: 0, gid: 0, pid: 1),
                    queuedAt: Timestamp(rawValue: 1_795_000_000_000_000), startedAt: Timestamp(rawValue: 1_795_000_000_000_000),
                    endedAt: phase.isTerminal ? Timestamp(rawValue: 1_795_000_002_100_000) : nil)
    }

    @Test("Ctrl-C names the run that goes on and how to wait for or cancel it", arguments: [
        (run(12, .loading) as RunSnapshot?, "^C: run 12 goes on; baton wait 12 or baton cancel 12"),
        (run(12, .queued), "^C: run 12 goes on; baton wait 12 or baton cancel 12"),
        (run(12, .success), "^C: run 12 had ended (success): baton show 12"),
        (nil, "^C: stopped waiting before batond named the run; it may be queued: baton status deploy"),
    ])
    func interrupted(run: RunSnapshot?, expected: String) {
        #expect(Interrupt.message(action: "deploy", run: run) == expected)
    }

    @Test("the outcome of a replacing trigger names the runs it replaced", arguments: [
        ([Int64](), "✓ deploy run 9 succeeded in 2.1s"),
        ([8], "✓ deploy run 9 (replaced run 8) succeeded in 2.1s"),
        ([7, 8], "✓ deploy run 9 (replaced runs 7, 8) succeeded in 2.1s"),
    ])
    func replaced(replaced: [Int64], expected: String) {
        #expect(RunCommand.outcomeLine(Self.run(9, .success), shared: false, replaced: replaced, context: Self.plain) == expected)
    }

    @Test("--json carries replaced only where the trigger replaced runs")
    func replacedJSON() throws {
        let with = Format.json(RunCommand.RunAnswer(RunOutcome(run: Self.run(9, .success), decision: .replaced, shared: false, replaced: [8])))
        let without = Format.json(RunCommand.RunAnswer(RunOutcome(run: Self.run(9, .success), decision: .created, shared: false)))
        #expect((try JSONSerialization.jsonObject(with: Data(with.utf8)) as? [String: Any])?["replaced"] as? [Int] == [8])
        #expect((try JSONSerialization.jsonObject(with: Data(without.utf8)) as? [String: Any])?["replaced"] == nil)
    }

    @Test("how to start batond: the package's unit for the system's socket where systemd has it, else by hand", arguments: [
        (SocketPath.system, true, false, "start it with `sudo systemctl start batond`"),
        (SocketPath.system, true, true, "start it with `systemctl start batond`"),
        (SocketPath.system, false, false, "start it with `batond --config FILE`"),
        ("/run/user/1000/baton.sock", true, false, "start it with `batond --config FILE`"),
    ])
    func startAdvice(socket: String, unitInstalled: Bool, root: Bool, expected: String) {
        #expect(Context.startAdvice(socket: socket, unitInstalled: unitInstalled, root: root) == expected)
    }
}
