@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: syntax errors say where")
struct ConfigSyntaxTests {
    /// What `batond --check-config` prints for `text`, as file `c.json5`.
    func refusal(_ text: String) -> String {
        do {
            _ = try Config.parse(Data(text.utf8), file: "c.json5")
            return "accepted"
        } catch {
            return error.description
        }
    }

    /// Whether Foundation's JSON5 reader, which the config is read with, accepts `bytes`.
    static func readerAccepts(_ bytes: [UInt8]) -> Bool {
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = true
        return (try? decoder.decode(JSONValue.self, from: Data(bytes))) != nil
    }

    @Test("each syntax error: FILE:LINE:COLUMN: what was expected, then the line and a caret under the column", arguments: [
        ("{ actions: { a: { exec: [\"x\"] }\n  b: 1 } }",
         "c.json5:2:3: expected ',' or '}' after the value of actions.a, found b\n  b: 1 } }\n  ^"),
        ("{\n  actions: {\n    a: { exec: [\"echo\" \"hi\"] },\n  },\n}",
         "c.json5:3:24: expected ',' or ']' after item 0 of actions.a.exec, found '\"'\n    a: { exec: [\"echo\" \"hi\"] },\n                       ^"),
        ("{ actions: { a: { exec: [\"x\"], description: \"unclosed } } }",
         "c.json5:1:45: this string is never closed: expected \" before the end of the file\n{ actions: { a: { exec: [\"x\"], description: \"unclosed } } }\n                                            ^"),
        ("{ actions: { a: { exec: ['x'], policy: reject } } }",
         "c.json5:1:40: expected a value for actions.a.policy, found reject: text needs quotes (\"reject\")\n"
            + "{ actions: { a: { exec: ['x'], policy: reject } } }\n                                       ^"),
        ("{ actions: { a: { exec: ['x'],, } } }",
         "c.json5:1:31: expected a field name or '}' in actions.a, found ','\n{ actions: { a: { exec: ['x'],, } } }\n                              ^"),
        ("{ actions { a: {} } }", "c.json5:1:11: expected ':' after the field name \"actions\", found '{'\n{ actions { a: {} } }\n          ^"),
        ("{ actions: { a: { exec: ['x'] } } } }",
         "c.json5:1:37: expected the end of the file after the config's closing '}' at line 1, column 35, found '}'\n"
            + "{ actions: { a: { exec: ['x'] } } } }\n                                    ^"),
        ("{ actions: {\n\ta: { exec: ['x'],\n",
         "c.json5:3:1: the file ends before actions.a is closed: expected '}' to match the '{' at line 2, column 5\n\n^"),
        ("{ actions: { a: { exec: ['x'] } } /* note", "c.json5:1:35: this comment is never closed: expected */ before the end of the file\n"
            + "{ actions: { a: { exec: ['x'] } } /* note\n                                  ^"),
        ("{ actions: { a: { exec: ['\\u12'] } } }",
         "c.json5:1:27: \\u needs four hex digits before the string ends, such as \\u00e9\n"
            + "{ actions: { a: { exec: ['\\u12'] } } }\n                          ^"),
        ("{ actions: { a: { exec: ['\\u1', 'x'] } } }",
         "c.json5:1:27: \\u needs four hex digits before the string ends, such as \\u00e9\n"
            + "{ actions: { a: { exec: ['\\u1', 'x'] } } }\n                          ^"),
        ("{ actions:\u{A0}{} }", "c.json5:1:11: expected a value for actions, found U+00A0 (a no-break space)\n{ actions:\u{A0}{} }\n          ^"),
        ("\t{ a: 1 x }", "c.json5:1:9: expected ',' or '}' after the value of a, found x\n\t{ a: 1 x }\n\t       ^"),
        ("{ a: [1, 2,, ] }", "c.json5:1:12: expected a value or ']' for a[2], found ','\n{ a: [1, 2,, ] }\n           ^"),
        ("// a comment ends at a carriage return too\r{ a: 1 x }", "c.json5:1:51: expected ',' or '}' after the value of a, found x\n"
            + "// a comment ends at a carriage return too?{ a: 1 x }\n                                                  ^"),
        ("{ a: \"^(a|b)\\un\" }", "c.json5:1:13: \\u needs four hex digits before the string ends, such as \\u00e9\n{ a: \"^(a|b)\\un\" }\n            ^"),
        ("{ a: '\\x' }", "c.json5:1:7: \\x needs two hex digits before the string ends, such as \\x41\n"
            + "{ a: '\\x' }\n      ^"),
        ("{ a: 1 } /", "c.json5:1:10: expected a comment (// or /*) after '/'\n{ a: 1 } /\n         ^"),
    ])
    func located(text: String, expected: String) {
        #expect(!Self.readerAccepts(Array(text.utf8)))
        #expect(refusal(text) == expected)
    }

    @Test("a reload's answer has the place on one line, without the line and caret")
    func summary() throws {
        do {
            _ = try Config.parse(Data("{ a: 1 x }".utf8), file: "c.json5")
            Issue.record("accepted")
        } catch {
            #expect(error.summary == "c.json5:1:8: expected ',' or '}' after the value of a, found x")
            #expect(error.description.hasPrefix(error.summary + "\n{ a: 1 x }\n       ^"))
        }
    }

    @Test("a number whose exponent has a sign and no digits, or a file of one number, is refused before Foundation's reader, which traps on them (found by fuzzing)", arguments: [
        ("{ actions: { a: { exec: ['x'], timeout: 2e- } } }",
         "c.json5:1:41: 2e- is not a number: an exponent needs digits after its sign, such as 1e-3\n"
            + "{ actions: { a: { exec: ['x'], timeout: 2e- } } }\n                                        ^"),
        ("{ a: [1.E+] }", "c.json5:1:7: 1.E+ is not a number: an exponent needs digits after its sign, such as 1e-3\n{ a: [1.E+] }\n      ^"),
        ("\r-.5e-", "c.json5:1:2: -.5e- is not a number: an exponent needs digits after its sign, such as 1e-3\n?-.5e-\n ^"),
        ("// one number, at the end of the file\n2222221", "c.json5:2:1: expected an object, got a number: a config is an object such as { actions: { … } }\n2222221\n^"),
    ])
    func bareExponent(text: String, expected: String) {
        #expect(refusal(text) == expected)
    }

    @Test("\\u takes four characters and \\x two, whatever they are, where the string's quote is not one of them", arguments: [
        #"{ a: "\x\x" }"#, #"{ a: "\uc} }" }"#, #"{ a: '\u{41}' }"#, #"{ a: "\x41\u00e9" }"#,
    ])
    func escapesTakeCharacters(text: String) {
        #expect(Self.readerAccepts(Array(text.utf8)))
        #expect(ConfigSyntax.firstProblem(in: Array(text.utf8)) == nil)
    }

    @Test("a bare exponent is a number token only: in a string, a comment, or with anything after it, it is no trap", arguments: [
        "{ a: '1e-' }", "// 1e-\n{ a: 1 }", "{ a: 1e-3 }", "{ a: 1e+x }", "{ a: .e- }", "{ a: 0x1e- }", "{ a: 1e+- }",
    ])
    func notBareExponent(text: String) {
        #expect(ConfigSyntax.trap(in: Array(text.utf8)) == nil)
    }

    @Test("an empty file, or one of comments only, says so", arguments: [
        ("", "c.json5: the file is empty: a config is an object such as { actions: { hello: { exec: [\"echo\", \"hello\"] } } }"),
        ("  \n\n", "c.json5: the file is empty: a config is an object such as { actions: { hello: { exec: [\"echo\", \"hello\"] } } }"),
        ("// nothing yet\n/* still */\n",
         "c.json5: the file is empty (it holds only comments): a config is an object such as { actions: { hello: { exec: [\"echo\", \"hello\"] } } }"),
    ])
    func empty(text: String, expected: String) {
        #expect(refusal(text) == expected)
    }

    @Test("a string left open swallows lines until the next quote: the error names where it started")
    func runaway() {
        let text = "{\n  actions: {\n    a: {\n      description: \"never closed,\n      exec: [\"x\"],\n    },\n  },\n}\n"
        #expect(refusal(text).hasPrefix(
            "c.json5:5:15: expected ',' or '}' after the value of actions.a.description, found x "
                + "(the string that starts at line 4, column 20 runs across lines: is its closing quote missing?)\n      exec: [\"x\"],\n              ^"))
    }

    @Test("a line of a minified config is shown around the column, and control characters as ?")
    func longLine() {
        let text = "{ actions: { " + (0..<60).map { "a\($0): { exec: ['x'] }, " }.joined() + "b: { exec: ['x'] } \u{1B}x } }"
        let lines = refusal(text).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("c.json5:1:1343: expected ',' or '}' after the value of actions.b, found U+001B"))
        #expect(lines[1].hasPrefix("…") && lines[1].count <= ConfigError.Place.shownWidth + 2 && lines[1].contains("} ?x }"))
        let caret = try? #require(lines[2].firstIndex(of: "^"))
        #expect(caret.map { lines[2].distance(from: lines[2].startIndex, to: $0) } == lines[1].distance(from: lines[1].startIndex, to: lines[1].firstIndex(of: "?")!))
    }

    @Test("whatever the reader accepts, the checker finds nothing wrong with: mutations of the example config, seeded")
    func agreesWithReader() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../examples/baton.json5")
        let example = try [UInt8](Data(contentsOf: url.standardizedFileURL))
        #expect(ConfigSyntax.firstProblem(in: example) == nil)
        var random = SplitMix(seed: 37)
        var refused = 0, located = 0
        var unlocated: [String] = []
        let alphabet = Array("{}[]:,'\"\\/*\n x1.-+".utf8)
        for _ in 0..<1_500 {
            var bytes = example
            var edits: [String] = []
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes.remove(at: at); edits.append("-\(at)")
                case 1: bytes.insert(alphabet.randomElement(using: &random)!, at: at); edits.append("+\(at):\(bytes[at])")
                default: bytes[at] = alphabet.randomElement(using: &random)!; edits.append("=\(at):\(bytes[at])")
                }
            }
            let problem = ConfigSyntax.firstProblem(in: bytes)
            // A bare exponent (`1e-`) would trap the reader: it never sees one (bareExponent).
            if problem?.traps == true { continue }
            if Self.readerAccepts(bytes) {
                #expect(problem == nil, "\(String(decoding: bytes, as: UTF8.self))")
            } else {
                refused += 1
                if problem != nil { located += 1 } else { unlocated.append("\(edits): " + edits.map { edit in String(decoding: bytes[min(bytes.count, max(0, Int(edit.dropFirst().prefix { $0.isNumber })! - 20))...].prefix(40), as: UTF8.self).debugDescription }.joined(separator: " | ")) }
            }
        }
        #expect(refused > 500)
        #expect(located == refused, "\(refused - located) of \(refused) refusals not located: \(unlocated.joined(separator: "\n"))")
    }

    @Test("nesting as deep as the reader goes is fine; one level more is named, however deep the file goes", arguments: [
        (511, nil as String?), (512, "c.json5:1:517: nested more than 512 deep"), (200_000, "c.json5:1:517: nested more than 512 deep"),
    ])
    func deep(arrays: Int, expected: String?) {
        let text = "{ a: " + String(repeating: "[", count: arrays) + String(repeating: "]", count: arrays) + " }"
        #expect(Self.readerAccepts(Array(text.utf8)) == (expected == nil))
        if let expected { #expect(refusal(text).hasPrefix(expected), "\(refusal(text).prefix(300))") }
        else { #expect(ConfigSyntax.firstProblem(in: Array(text.utf8)) == nil) }
    }

    @Test("a long path is elided in the middle")
    func longPath() {
        let text = String(repeating: "[", count: 100)
        #expect(refusal(text).hasPrefix("c.json5:1:101: the file ends before [0][0][0][0][0][0][0][0]…[0][0][0][0][0][0][0][0] is closed: "
            + "expected ']' to match the '[' at line 1, column 100\n"))
    }
}
