@testable import BatonEngine
import Testing

/// Issue 42, item 3: every occurrence of a secret param's value in a run's output is `***`
/// before anyone sees it, however the output is cut into chunks.
@Suite struct SecretRedactorTests {
    /// Feeds `chunks` through one redactor, then its end; returns what came out.
    static func stream(_ values: [String], _ chunks: [[UInt8]]) -> String {
        guard var redactor = SecretRedactor(values: values) else { return String(decoding: chunks.joined(), as: UTF8.self) }
        var out: [UInt8] = []
        for chunk in chunks { out += redactor.redact(chunk) }
        out += redactor.finish()
        return String(decoding: out, as: UTF8.self)
    }

    /// Every way to cut `text`'s bytes in two and in three (inside a character too): the output
    /// never depends on where the pipe cut it.
    static func cuts(of text: String) -> [[[UInt8]]] {
        let bytes = Array(text.utf8)
        let piece = { (range: Range<Int>) in Array(bytes[range]) }
        var all: [[[UInt8]]] = [[bytes]]
        for first in 0...bytes.count {
            all.append([piece(0..<first), piece(first..<bytes.count)])
            for second in first...bytes.count {
                all.append([piece(0..<first), piece(first..<second), piece(second..<bytes.count)])
            }
        }
        return all
    }

    static let table: [(values: [String], text: String, expected: String)] = [
        (["hunter2"], "token=hunter2\n", "token=***\n"),
        (["hunter2"], "hunter2hunter2", "******"),
        (["hunter2"], "hunte hunter hunter2x", "hunte hunter ***x"),
        // A start of the value that turns out not to be it is given back whole.
        (["hunter2"], "hunthunter2", "hunt***"),
        (["hunter2"], "hhunter2", "h***"),
        (["aab"], "aaab", "a***"),
        // Occurrences that overlap are masked as one: no piece of either shows.
        (["abab"], "abababab", "***"),
        (["abab"], "ababab", "***"),
        (["xyzxyz"], "xyzxyzxyz.", "***."),
        (["abcd", "cdef"], "abcdef", "***"),
        (["abcd", "cdef"], "-abcdefx abcdcdef", "-***x ******"),
        (["abcdef", "cd"], "abcdcdef", "ab******ef"),
        // The longest value at a place wins; a shorter one inside another is masked too.
        (["abc", "abcdef"], "xabcdefy abcx", "x***y ***x"),
        (["abc", "abcdef"], "abcde", "***de"),
        (["s3", "ss3"], "sss3", "s***"),
        // A value that ends the stream without its end stays as it came.
        (["secretvalue"], "the secret", "the secret"),
        (["é-clé"], "mot: é-clé.", "mot: ***."),
        ([], "nothing to hide", "nothing to hide"),
        ([""], "an empty value hides nothing", "an empty value hides nothing"),
    ]

    @Test("each text, cut into chunks at every place (two and three pieces), comes out the same, every value masked")
    func chunkings() {
        for (values, text, expected) in Self.table {
            for chunks in Self.cuts(of: text) {
                let out = Self.stream(values, chunks)
                #expect(out == expected, "values \(values), chunks \(chunks): \(out)")
            }
        }
    }

    @Test("a chunk's last bytes that could begin a value are held back, fewer than the value, and given back at the end")
    func heldBack() throws {
        var redactor = try #require(SecretRedactor(values: ["topsecret"]))
        #expect(redactor.redact(Array("log: tops".utf8)) == Array("log: ".utf8))
        #expect(redactor.held == Array("tops".utf8))
        #expect(redactor.redact(Array("ecret!".utf8)) == Array("***!".utf8))
        #expect(redactor.held.isEmpty)
        #expect(redactor.redact(Array("top".utf8)).isEmpty)
        #expect(redactor.finish() == Array("top".utf8))
    }

    @Test("a whole text: an error line, a tail whose front (or a line whose end) was cut off in the middle of a value")
    func wholeTexts() throws {
        let redactor = try #require(SecretRedactor(values: ["0123456789"]))
        #expect(redactor.redactAll("exited with status 1: bad token 0123456789") == "exited with status 1: bad token ***")
        #expect(redactor.redactAll(Array("56789 and 0123456789".utf8), cutFront: true) == Array("*** and ***".utf8))
        #expect(redactor.redactAll(Array("56789 and".utf8), cutFront: false) == Array("56789 and".utf8))
        #expect(redactor.redactAll("a line cut at 012345", cutBack: true) == "a line cut at ***")
        #expect(redactor.redactAll("a line cut at 012345", cutBack: false) == "a line cut at 012345")
        #expect(redactor.redactAll("0123456789 then 01", cutBack: true) == "*** then ***")
    }

    static let sealer = SecretSealer { action, param, value in "h(\(action)/\(param)/\(value.count):\(value.hashValue))" }

    @Test("sealed params: *** for the secret, its hash in the key, the value kept apart; equal values share a key, others do not")
    func sealing() throws {
        let action = Action(name: "deploy", exec: ["true"], params: ["token": ParamSpec(secret: true), "env": ParamSpec()],
                            keyParams: ["env", "token"])
        let one = try action.seal(["token": "abc", "env": "prod"], with: Self.sealer)
        #expect(one.params == ["token": "***", "env": "prod"])
        #expect(one.secrets == ["token": "abc"])
        #expect(!one.key.contains("abc") && one.key.contains("token=h(deploy/token/3"))
        #expect(try action.seal(["token": "abc", "env": "prod"], with: Self.sealer).key == one.key)
        #expect(try action.seal(["token": "abd", "env": "prod"], with: Self.sealer).key != one.key)
        #expect(throws: BatonError.self) { try action.seal(["token": "abc", "env": "prod"], with: nil) }
        let plain = Action(name: "plain", exec: ["true"], params: ["env": ParamSpec()], keyParams: ["env"])
        #expect(try plain.seal(["env": "qa"], with: nil) == SealedParams(params: ["env": "qa"], key: "plain env=qa", secrets: [:]))
    }

    @Test("a secret value that does not match its pattern is not quoted in the error")
    func patternMessage() throws {
        let pattern = try ParamPattern("^[a-z]+$")
        let action = Action(name: "deploy", exec: ["true"], params: ["token": ParamSpec(pattern: pattern, secret: true)])
        do {
            _ = try action.resolveParams(["token": "NOT-1234"])
            Issue.record("the value was accepted")
        } catch {
            #expect(!error.message.contains("NOT-1234") && error.message.contains("the secret value"), "\(error.message)")
        }
    }

    @Test("a secret value of 1 to 3 bytes is refused (bad_params), not quoted; an empty one and one of 4 bytes are taken")
    func shortSecret() throws {
        let action = Action(name: "deploy", exec: ["true"], params: ["token": ParamSpec(secret: true)])
        for value in ["1", "ab", "xyz"] {
            #expect {
                _ = try action.resolveParams(["token": value])
            } throws: { error in
                guard let error = error as? BatonError, case .badParam(name: "token", _) = error else { return false }
                return error.message.contains("at least 4 bytes") && !error.message.contains(": \(value)")
            }
        }
        #expect(try action.resolveParams(["token": "abcd"]) == ["token": "abcd"])
        #expect(try action.resolveParams(["token": ""]) == ["token": ""])
        let plain = Action(name: "plain", exec: ["true"], params: ["n": ParamSpec()])
        #expect(try plain.resolveParams(["n": "1"]) == ["n": "1"])
    }

    /// The mask as a whole text would have it: every occurrence of every value found, those that
    /// overlap gathered, one `***` for each group.
    static func reference(_ values: [[UInt8]], _ text: [UInt8]) -> [UInt8] {
        var ranges: [Range<Int>] = []
        for start in text.indices {
            for value in values where start + value.count <= text.count && text[start..<start + value.count].elementsEqual(value) {
                ranges.append(start..<start + value.count)
            }
        }
        var out: [UInt8] = []
        var index = 0
        var end = 0
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if range.lowerBound >= end {
                out += text[index..<range.lowerBound] + SecretRedactor.mask
            }
            end = max(end, range.upperBound)
            index = max(index, end)
        }
        return out + text[min(index, text.count)...]
    }

    @Test("random texts of a small alphabet, random values, random chunks: the stream's mask is the whole text's, every occurrence under a ***")
    func randomized() throws {
        var generator = SplitMix(seed: 42)
        let alphabet = Array("abc".utf8)
        let word = { (count: Int, generator: inout SplitMix) in (0..<count).map { _ in alphabet[Int(generator.next() % 3)] } }
        for _ in 0..<2_000 {
            let values = (0..<Int(1 + generator.next() % 3)).map { _ in word(Int(2 + generator.next() % 4), &generator) }
            let text = word(Int(generator.next() % 40), &generator)
            var redactor = try #require(SecretRedactor(values: values.map { String(decoding: $0, as: UTF8.self) }))
            var out: [UInt8] = []
            var rest = text[...]
            while !rest.isEmpty {
                let size = Int(generator.next() % 7)
                out += redactor.redact(Array(rest.prefix(size)))
                rest = rest.dropFirst(size)
            }
            out += redactor.finish()
            let expected = Self.reference(values, text)
            #expect(out == expected, "values \(values.map { String(decoding: $0, as: UTF8.self) }), text \(String(decoding: text, as: UTF8.self))")
            #expect(redactor.redactAll(text) == expected)
        }
    }
}
