import BatonCore
import Foundation
import Testing

/// Issue 21, item 10: a param value or an error line with `\e]0;PWNED\a\e[31m` was printed as is
/// by history, show, status, run and the rest (`cat -v` showed `^[]0;PWNED^G`): anyone who may
/// trigger could write into an admin's terminal. Each human command's stdout and stderr now hold
/// no ESC, BEL or CR from the data, while JSON and `show --output` keep every byte.
@Suite("End to end: no control character from a run reaches a terminal", .offPool)
struct TerminalEscapeTests {
    static let value = "\u{1B}]0;PWNED\u{07}\u{1B}[31mred"
    static let config = #"""
        { socketMode: "0600", actions: {
            evil: { exec: ["sh", "-c", "printf 'done\\n'; printf '\\033]0;PWNED\\007\\033[31mboom\\r\\n' >&2; exit 3"],
                    description: "\u001b]0;PWNED\u0007 what it does",
                    params: { note: {}, env: { pattern: "^prod$", default: "prod" } } },
            hold: { exec: ["sleep", "30"], params: { note: {} }, keyParams: ["note"] },
        } }
        """#

    /// What `cat -v` would show as `^[`, `^G` or `^M`.
    static func controls(_ text: String) -> Bool {
        text.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{07}" || $0 == "\r" }
    }

    func check(_ name: String, _ output: Output, code: Int32? = nil, mentions: String = "PWNED") {
        #expect(!Self.controls(output.stdout) && !Self.controls(output.stderr),
                "\(name): \(output.stdout.debugDescription) \(output.stderr.debugDescription)")
        #expect((output.stdout + output.stderr).contains(mentions), "\(name) shows the text, escaped: \(output.stdout) \(output.stderr)")
        if let code { #expect(output.code == code, "\(name): exit \(output.code)") }
    }

    @Test("run, wait, show, history, status, stats, actions, cancel, watch and Error: lines: escaped; JSON and --output exact")
    func everyCommand() throws {
        let daemon = try Daemon(config: Self.config)
        let watch = try Spawned([Binaries.baton, "--socket", daemon.socket, "watch"])
        defer { watch.stop() }
        _ = watch.readStderr { $0.contains("watching") }

        check("run", try daemon.baton("run", "evil", "-p", "note=\(Self.value)"), code: 1, mentions: "boom")
        check("wait", try daemon.baton("wait", "1"), code: 1, mentions: "boom")
        check("show", try daemon.baton("show", "1"), code: 0)
        check("history", try daemon.baton("history"), code: 0, mentions: "boom")
        check("status", try daemon.baton("status"), code: 0, mentions: "boom")
        check("stats", try daemon.baton("stats"), code: 0, mentions: "evil")
        check("actions", try daemon.baton("actions"), code: 0)
        check("cancel of an ended run", try daemon.baton("cancel", "1"), code: 0, mentions: "had already ended")
        // Error: lines, from batond's message (it quotes the value) and from the CLI's own.
        check("a value batond refuses", try daemon.baton("run", "evil", "-p", "env=\(Self.value)"), code: 2)
        check("an unknown action", try daemon.baton("run", Self.value), code: 2)
        check("a usage error", try daemon.baton("history", "--since", Self.value), code: 2)
        check("run --detach", try daemon.baton("run", "hold", "-p", "note=\(Self.value)", "--detach"), code: 0, mentions: "2")
        check("status with a run in flight", try daemon.baton("status"), code: 0, mentions: "loading")
        check("cancel", try daemon.baton("cancel", "hold"), code: 0, mentions: "cancelled")
        let watched = Self.read(watch.stdout) { $0.contains("→ cancelled") }
        check("watch", Output(code: 0, stdout: watched, stderr: ""), mentions: "boom")

        let json = try JSONDecoder().decode([RunSnapshot].self, from: Data(try daemon.baton("history", "--json", "-a", "evil").stdout.utf8))
        #expect(json.first?.params["note"] == Self.value)
        #expect(json.first?.error?.contains("\u{1B}]0;PWNED\u{07}\u{1B}[31mboom") == true, "\(String(describing: json.first?.error))")
        let ndjson = try daemon.baton("history", "--format", "ndjson", "-a", "evil").stdout
        #expect(try JSONDecoder().decode(RunSnapshot.self, from: Data(ndjson.utf8)).params["note"] == Self.value)
        #expect(try daemon.baton("show", "1", "--json").stdout.contains(#"\u001b]0;PWNED\u0007"#))
        #expect(try daemon.baton("show", "1", "--output").stdout == "done\n\u{1B}]0;PWNED\u{07}\u{1B}[31mboom\r\n")
        #expect(try daemon.baton("history", "--format", "csv", "-a", "evil").stdout.contains("\u{1B}]0;PWNED\u{07}"), "CSV is data")
        let actions = try daemon.baton("actions", "--json").stdout
        #expect(actions.contains(#"\u001b]0;PWNED\u0007 what it does"#), "\(actions)")
    }

    /// Reads `fd` until `done` holds for what came, or 20 s pass.
    static func read(_ fd: Int32, until done: (String) -> Bool) -> String {
        let end = ContinuousClock.now + .seconds(20)
        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !done(text), case let left = end - .now, left > .zero {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, Int32(left.components.seconds * 1_000 + 1)) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            text += String(decoding: buffer[..<n], as: UTF8.self)
        }
        return text
    }
}
