@testable import BatonCore
@testable import BatonEngine
import Testing

@Suite("Param patterns")
struct ParamPatternTests {
    @Test("whole-value matches", arguments: [
        ("^(staging|prod)$", "prod", true), ("^(staging|prod)$", "production", false), ("staging|prod", "staging", true),
        ("[a-z0-9-]{1,5}", "ab-1", true), ("[a-z0-9-]{1,5}", "abcdef", false), ("[a-z0-9-]{1,5}", "", false),
        (#"\d+"#, "2026", true), (#"\d+"#, "20x6", false), (#"v\d+\.\d+"#, "v1.20", true), (#"v\d+\.\d+"#, "v1x20", false),
        (#"\w+"#, "hello_1", true), (#"\w+"#, "a-b", false), (#"\s*x\s*"#, "  x ", true), (#"\S+"#, "a b", false),
        ("a*", "", true), ("a+", "", false), ("a?b", "b", true), ("a{3}", "aaa", true), ("a{3}", "aaaa", false),
        ("a{2,}", "aaaaa", true), ("a{2,}", "a", false), ("(ab)*c", "ababc", true), ("(ab)*c", "abac", false),
        ("(?:x|y)+", "xyyx", true), ("(?<tag>v[0-9])", "v7", true), ("(?i)yes|no", "YES", true), ("(?i:a)b", "Ab", true),
        ("(?i:a)b", "AB", false), ("[^0-9]+", "abc", true), ("[^0-9]+", "ab1", false), ("[]a]", "]", true),
        ("[a-]", "-", true), (#"[\d.]+"#, "1.2", true), ("[[:alpha:]]+", "abcé", true), ("[[:digit:]]", "x", false),
        (#"\x41\u0042\u{43}"#, "ABC", true), (#"a\.b"#, "a.b", true), (#"a\.b"#, "axb", false), (".", "é", true),
        (".+", "a\nb", false), (#"\bword\b"#, "word", true), ("^$", "", true), ("^a$|^b$", "b", true), ("a{", "a{", true),
        ("x{1,2}?y", "xy", true), ("a+?", "aaa", true), ("(a|ab)(c|bcd)(d*)", "abcd", true), ("ab|", "", true),
        ("(a+)+", String(repeating: "a", count: 30), true), ("^(a+)+$", String(repeating: "a", count: 24) + "b", false),
    ])
    func matches(pattern: String, value: String, expected: Bool) throws {
        #expect(try ParamPattern(pattern).matches(value) == expected)
    }

    /// As in RE2 and Go: `\d` is [0-9], `\w` [0-9A-Za-z_], `\s` [\t\n\f\r ] (and `[[:digit:]]`,
    /// `[[:word:]]`, `[[:space:]]` the same), and `\b` is between one of `\w` and anything else; the
    /// other bracket classes (`[[:alpha:]]`) stay Unicode's.
    @Test("\\d, \\w, \\s and \\b are ASCII, as in RE2 and Go", arguments: [
        (#"^\w+$"#, "héllo", false), (#"^\w+$"#, "hello_42", true), (#"^\w+$"#, "日本", false), (#"^\w+$"#, "e\u{301}", false),
        (#"^\d+$"#, "١٢٣", false), (#"^\d+$"#, "０１", false), (#"^\d+$"#, "0123456789", true), (#"^[\d]+$"#, "١", false),
        (#"^\s$"#, "\u{A0}", false), (#"^\s$"#, "\u{2003}", false), (#"^\s$"#, "\u{85}", false), (#"^\s$"#, "\u{0B}", false),
        (#"^\s+$"#, " \t\n\r\u{0C}", true), (#"^\W$"#, "é", true), (#"^\D$"#, "١", true), (#"^\S$"#, "\u{A0}", true),
        (#"^[^\w]$"#, "é", true), (#"^[\w-]+$"#, "ab-é", false), (#"^x\bé$"#, "xé", true), (#"^é\b$"#, "é", false),
        (#"^\bé$"#, "é", false), (#"(?i)^\w+$"#, "ABCxyz", true), ("^[[:alpha:]]+$", "é", true),
        ("^[[:digit:]]$", "١", false), ("^[[:word:]]$", "é", false), ("^[[:space:]]$", "\u{2003}", false), ("^[[:upper:]]$", "É", true),
    ])
    func ascii(pattern: String, value: String, expected: Bool) throws {
        #expect(try ParamPattern(pattern).matches(value) == expected)
    }

    @Test("what cannot be matched in linear time, or is not a pattern, is refused with a reason", arguments: [
        (#"(a)\1"#, "backreferences (\\1) are not supported"), ("(?=a)a", "lookaround"), ("(?<!a)b", "lookaround"),
        ("a++", "possessive quantifiers"), ("(", "missing )"), (")", "unmatched )"), ("[a-", "missing ]"),
        ("*a", "* has nothing to repeat"), ("a**", "follows another quantifier"), ("[z-a]", "a range out of order"),
        (#"\q"#, "unknown escape \\q"), ("a{5,2}", "the maximum is below the minimum"), ("a{1001}", "a repeat count above"),
        ("(a{1000}){1000}", "too large"), ("[[:nope:]]", "unknown class"), ("(?ix)a", "unknown flag x"), ("(?x)a", "unknown group syntax"), ("^*", "an anchor cannot be repeated"),
        (String(repeating: "(", count: 200) + String(repeating: ")", count: 200), "nested more than"),
        (String(repeating: "a", count: 1_025), "longer than 1024 bytes"),
    ])
    func refused(pattern: String, reason: String) {
        #expect {
            try ParamPattern(pattern)
        } throws: { error in
            (error as? PatternError)?.description.contains(reason) == true
        }
    }

    /// The pathological inputs of issue 12: a backtracking engine takes 1.8 s at 16 characters
    /// and doubles with each one. Here the work (automaton states visited, counted, not timed)
    /// is at most (length + 1) × program size for every length up to the 4 KiB cap.
    @Test("nested quantifiers against long near-misses: refused with work linear in the length",
          arguments: [16, 18, 20, 24, 64, 4_096])
    func catastrophicInputs(length: Int) throws {
        for source in ["^(a+)+$", "(a*)*b", "^(a|a)+$", "^(a|aa)+$", "(x+x+)+y", "^([a-z]+)*[0-9]$", "(a|aa|a?){0,50}b"] {
            let pattern = try ParamPattern(source)
            let value = String(repeating: "a", count: length) + "!"
            #expect(pattern.matches(value) == false)
            #expect(pattern.statesVisited(value) <= (length + 2) * pattern.programSize, "\(source)")
        }
    }

    @Test("nested quantifiers are flagged for the config warning", arguments: [
        ("^(a+)+$", true), ("(a*)*", true), ("(a+){2,5}", true), ("((ab)+c)*", true),
        ("^(staging|prod)$", false), ("(ab)+", false), ("(a+)?", false), ("[a-z]+-[0-9]+", false),
    ])
    func nested(pattern: String, flagged: Bool) throws {
        #expect(try ParamPattern(pattern).hasNestedQuantifier == flagged)
    }

    /// The same answers as Swift's own (backtracking) Regex on patterns both understand.
    @Test("agrees with Swift's Regex on short ASCII values")
    func agreesWithSwiftRegex() throws {
        let patterns = ["^(staging|prod)$", "[a-c]+b?", "(ab|a)(bc|c)?", "x*y{1,3}z?", #"\d{2}-\w+"#, "(a|b)*abb",
                        "[^ab]c|a.c", "((a|b)c)+", "(?i)[a-c]x", #"\bab"#, "a{0,2}b{2}"]
        let alphabet: [Character] = ["a", "b", "c", "x", "y", "z", "1", "2", "-", "A", " "]
        var values = [""]
        for _ in 0..<3 { values += values.flatMap { value in alphabet.map { value + String($0) } }.filter { $0.count <= 4 } }
        for source in patterns {
            let ours = try ParamPattern(source)
            let theirs = try Regex(source)
            for value in Set(values) {
                let expected = (try? theirs.wholeMatch(in: value)) != nil
                #expect(ours.matches(value) == expected, "\(source) against \(value)")
            }
        }
    }
}
