import BatonClient
import BatonCore
@testable import baton
import Foundation
import Testing

/// Issue 21, item 10: a param value, an error or output with `\e]0;PWNED\a\e[31m` was printed as
/// is, so anyone who may trigger could write into an admin's terminal. Every human-readable text
/// of the CLI escapes control characters visibly; JSON, CSV and `show --output` are untouched.
@Suite("Terminal: what reaches a terminal holds no control character but the CLI's own colours")
struct TerminalTests {
    static let hostile = "\u{1B}]0;PWNED\u{07}\u{1B}[31mred\r\u{9B}2J\u{202E}gpj.exe\u{7F}"
    static let shown = #"\e]0;PWNED\a\e[31mred\r\u{9B}2J\u{202E}gpj.exe\x7f"#

    static var plain: Context { Context(socketPath: "/tmp/none.sock", databasePath: nil, isTerminal: false, useColor: false) }
    static var colored: Context { Context(socketPath: "/tmp/none.sock", databasePath: nil, isTerminal: true, useColor: true) }

    static var run: RunSnapshot {
        var run = RunSnapshot(id: 7, action: "deploy", key: "deploy env=" + hostile, phase: .failure, policy: .reject,
                              params: ["env": hostile, "note": "ok"], trigger: Peer(uid: 0, gid: 0, pid: 1),
                              queuedAt: Timestamp(rawValue: 1_795_000_000_000_000), startedAt: Timestamp(rawValue: 1_795_000_001_000_000),
                              endedAt: Timestamp(rawValue: 1_795_000_002_000_000), attempts: 1, exitCode: 1, reason: hostile, error: hostile)
        run.host = "web-" + hostile
        run.progress = Progress(fraction: 0.5, message: hostile)
        // A deny's reason is anyone's text (issue 40 review, item 5): `show` escapes it, its approvers and who decided.
        run.approval = ApprovalState(by: ["group:" + hostile], until: nil, verdict: .denied, decidedBy: hostile,
                                     decidedAt: Timestamp(rawValue: 1_795_000_001_500_000), reason: hostile)
        return run
    }

    static var transition: Transition {
        Transition(runID: 7, seq: 3, from: .loading, to: .failure, at: Timestamp(rawValue: 1_795_000_002_000_000),
                   detail: TransitionDetail(reason: hostile, exitCode: 1, error: hostile))
    }

    /// The bytes a terminal would take as control: C0 but the line feeds between lines, DEL, C1, bidi overrides and isolates.
    static func controls(_ text: String, allowingColors: Bool = false) -> [Unicode.Scalar] {
        let text = allowingColors ? text.replacing(/\u{1B}\[[0-9]+m/, with: "") : text
        return text.unicodeScalars.filter { $0 != "\n" && Terminal.isControl($0) }
    }

    @Test("control characters are escaped visibly; everything else is left as it is", arguments: [
        (hostile, shown), ("a\tb\nc\0d\u{08}\u{0B}\u{0C}", #"a\tb\nc\0d\b\v\f"#), ("\u{01}\u{1F}", #"\x01\x1f"#),
        ("\u{85}\u{9F}", #"\u{85}\u{9F}"#), ("\u{202A}\u{202B}\u{202C}\u{202D}\u{2066}\u{2067}\u{2068}\u{2069}", #"\u{202A}\u{202B}\u{202C}\u{202D}\u{2066}\u{2067}\u{2068}\u{2069}"#),
        ("héllo 日本 🎉 e\u{301} \\e", "héllo 日本 🎉 e\u{301} \\e"), ("", ""),
    ])
    func visible(text: String, expected: String) {
        #expect(Terminal.visible(text) == expected)
    }

    @Test("every renderer, plain and in colour: no control character from the data; the colours stay", arguments: [false, true])
    func renderers(color: Bool) {
        let context = color ? Self.colored : Self.plain
        let detail = RunDetail(run: Self.run, transitions: [Self.transition],
                               triggers: [TriggerRecord(runID: 7, action: "deploy", key: "deploy env=" + Self.hostile, decision: .rejected, policy: .reject,
                                                        peer: nil, at: Self.run.queuedAt, params: ["env": Self.hostile])],
                               output: Data(("line one " + Self.hostile + "\nline two\r\n").utf8), outputTruncated: false)
        let texts: [(String, String)] = [
            ("history", HistoryCommand.render([Self.run], format: .table, utc: true, context: context, now: .now)),
            ("show", ShowCommand.story(detail, context: context)),
            ("run", RunCommand.outcomeLine(Self.run, shared: false, context: context)),
            ("spinner", Spinner.line(Self.run, frame: 0)),
            ("watch", WatchCommand.line(Self.run, Self.transition, utc: true, context: context)),
            ("stats", StatsCommand.table([ActionStats(action: Self.hostile)], context: context, now: .now)),
            ("status", StatusCommand.text(Self.status, context: context, now: .now)),
            ("actions", ActionsCommand.table(Self.status.actions)),
            ("cancel", CancelCommand.text([Self.run, Self.loading], alreadyEnded: [], context: context)),
            ("cancel of an ended run", CancelCommand.text([Self.ended], alreadyEnded: [8], context: context)),
            ("history --denied", HistoryCommand.deniedTable(detail.triggers.map { var record = $0; record.action = Self.hostile; return record }, utc: true)),
            ("prune", PruneCommand.summary(PruneReport(removed: [Self.hostile: 2], dryRun: true))),
            ("Error: from batond", errorText(Failure(code: 2, message: "param env: \"\(Self.hostile)\" does not match", hint: Self.hostile)).text),
            ("Error: of usage", errorText(UsageError("baton history: --since expects …, got \(Self.hostile)")).text),
        ]
        for (name, text) in texts {
            #expect(Self.controls(text, allowingColors: color).isEmpty, "\(name): \(text.debugDescription)")
            #expect(text.contains("PWNED"), "\(name) still shows the text: \(text)")
        }
        if color {
            #expect(texts[0].1.contains("\u{1B}[31mfailure\u{1B}[0m"), "the phase in red")
            #expect(texts[2].1.hasPrefix("\u{1B}[31m✗\u{1B}[0m"), "the cross in red")
        }
        #expect(texts[1].1.contains("  │ line one \(Self.shown)\n  │ line two\\r\n"), "the output tail, line by line")
    }

    static var loading: RunSnapshot {
        var run = Self.run
        run.id = 8
        run.action = Self.hostile
        run.phase = .loading
        run.endedAt = nil
        return run
    }

    static var ended: RunSnapshot {
        var run = Self.loading
        run.phase = .success
        run.endedAt = Self.run.endedAt
        return run
    }

    static var status: BatonStatus {
        var info = ActionInfo(name: "deploy", description: Self.hostile, exec: ["echo", Self.hostile], policy: .reject, policies: [], timeout: nil,
                              params: ["env": ParamInfo(pattern: Self.hostile, default: Self.hostile)], keyParams: ["env"],
                              inFlight: [Self.loading], last: Self.run)
        info.removed = true
        return BatonStatus(actions: [info], storeProblem: "disk I/O error: " + Self.hostile, processTree: Self.hostile)
    }

    @Test("JSON and CSV keep every byte")
    func exact() throws {
        let json = HistoryCommand.render([Self.run], format: .ndjson, utc: true, context: Self.plain, now: .now)
        let decoded = try JSONDecoder().decode(RunSnapshot.self, from: Data(json.utf8))
        #expect(decoded.params["env"] == Self.hostile && decoded.error == Self.hostile)
        let csv = HistoryCommand.render([Self.run], format: .csv, utc: true, context: Self.plain, now: .now)
        #expect(csv.contains("\u{1B}]0;PWNED\u{07}"))
    }
}
