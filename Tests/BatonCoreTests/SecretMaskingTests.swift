@testable import BatonCore
@testable import BatonEngine
@testable import BatonProcess
import Testing

/// What the conductor masks that was cut before it saw it: a progress message (cut at 200
/// characters) and an error's last line (cut at 300 bytes), where a value straddling the cut
/// must not keep its visible start.
@Suite struct SecretMaskingTests {
    static let value = "0123456789"
    static let redactor = SecretRedactor(values: [value])

    @Test("a progress line cut at 200 characters in the middle of a value: its start is masked too")
    func progressCut() throws {
        for head in ["", "3/10 ", "42% "] {
            let line = head + String(repeating: "p", count: 200 - 4) + Self.value + " more"
            let progress = try #require(Progress(line: line))
            let message = try #require(Conductor.masked(progress, Self.redactor).message)
            #expect(!message.contains("0123"), "\(message)")
            #expect(message.hasSuffix("***"), "\(message)")
        }
        // A message that was not cut keeps a value's start that is not the value.
        let short = try #require(Progress(line: "50% waiting for 0123"))
        #expect(Conductor.masked(short, Self.redactor).message == "waiting for 0123")
    }

    /// The error line as `LastLine` keeps it: the first 300 bytes of the line.
    static func lastLine(_ text: String) -> String? {
        var line = LastLine()
        Array(text.utf8).withUnsafeBytes { line.append($0) }
        return line.line
    }

    @Test("out of memory: the error's line is masked where it was cut, then the error says out of memory")
    func outOfMemoryCut() throws {
        let raw = String(repeating: "e", count: 300 - 4) + Self.value + " tail"
        var result = AttemptResult.killed(signal: 9, lastErrorLine: Self.lastLine(raw))
        result.oomKills = 1
        let told = Conductor.masked(AttemptOutcome(result: result), Self.redactor)
        let error = try #require(told.result.error)
        #expect(error.hasPrefix("out of memory: the kernel killed 1 process at the action's memory limit (killed by signal 9: eee"), "\(error)")
        #expect(error.hasSuffix("e***)"), "\(error)")
        #expect(!error.contains("0123"), "\(error)")
        // Without secrets it is said all the same; a success is not.
        #expect(Conductor.masked(AttemptOutcome(result: result), nil).result.error?.hasPrefix("out of memory") == true)
        var succeeded = AttemptResult.exited(status: 0)
        succeeded.oomKills = 2
        #expect(Conductor.masked(AttemptOutcome(result: succeeded), nil).result.error == nil)
    }

    @Test("an error line cut at 300 bytes inside a character of a value: the value's start is masked, not left before a U+FFFD")
    func cutInsideCharacter() throws {
        let redactor = try #require(SecretRedactor(values: ["é-clé secrète"]))
        // 294 + "é-cl" (5 bytes) is 299: the 300th byte is the first of the second "é".
        let raw = String(repeating: "e", count: 294) + "é-clé secrète"
        let result = AttemptResult.exited(status: 1, lastErrorLine: Self.lastLine(raw))
        let error = try #require(Conductor.masked(AttemptOutcome(result: result), redactor).result.error)
        #expect(!error.contains("é-cl") && !error.contains("\u{FFFD}"), "\(error)")
        #expect(error.hasSuffix("e***"), "\(error)")
    }
}

/// Item 5 of the review: each chunk of a run with secrets changes its redaction in place, under
/// the conductor's lock: its tail is appended to, not copied (a copy is a new buffer each time).
@Suite struct RedactionInPlaceTests {
    @Test("200 chunks: the kept tail's buffer moves only when it grows, not at each chunk; the output is masked")
    func inPlace() throws {
        let source = Conductor.OutputSource(run: 7, attempt: 1, action: "deploy", key: "deploy", keep: 1_000_000)
        let redactor = try #require(SecretRedactor(values: ["0123456789"]))
        var redactions: IDMap<Int64, Conductor.Redaction> = [7: Conductor.Redaction(source: source, streams: [.stdout: redactor])]
        redactions[7]?.tail.reserveCapacity(64 * 1_024)
        var moves = 0
        var last = redactions[7]?.tail.withUnsafeBufferPointer { $0.baseAddress }
        var out: [UInt8] = []
        for _ in 0..<200 {
            out += try #require(Conductor.Redaction.redact(&redactions, 7, .stdout, Array("x 0123456789 y\n".utf8)))
            let now = redactions[7]?.tail.withUnsafeBufferPointer { $0.baseAddress }
            if now != last { moves += 1 }
            last = now
        }
        #expect(moves <= 1, "the tail's buffer moved \(moves) times in 200 chunks")
        #expect(out == Array(String(repeating: "x *** y\n", count: 200).utf8))
        #expect(redactions[7]?.tail == out)
        #expect(Conductor.Redaction.redact(&redactions, 8, .stdout, [1]) == nil)
        #expect(Conductor.Redaction.redact(&redactions, 7, .stderr, [1]) == nil)
    }
}
