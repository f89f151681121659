@testable import BatonCore
import Testing

@Suite("Suggestion: did you mean")
struct SuggestionTests {
    @Test("the distance counts inserts, deletes, changes and swaps of neighbours, up to the limit", arguments: [
        ("status", "status", 2, 0 as Int?),
        ("stauts", "status", 2, 1),
        ("deplyo", "deploy", 2, 1),
        ("polcy", "policy", 2, 1),
        ("timout", "timeout", 2, 1),
        ("execc", "exec", 2, 1),
        ("histroy", "history", 2, 1),
        ("abcd", "badc", 2, 2),
        ("kitten", "sitting", 2, nil),
        ("kitten", "sitting", 3, 3),
        ("", "abc", 3, 3),
        ("abc", "", 2, nil),
        ("ca", "abc", 3, 3),
        ("a", "abcdefgh", 2, nil),
    ])
    func distance(a: String, b: String, limit: Int, expected: Int?) {
        #expect(Suggestion.distance(Array(a), Array(b), limit: limit) == expected)
        #expect(Suggestion.distance(Array(b), Array(a), limit: limit) == expected)
    }

    static let commands = ["run", "status", "history", "show", "logs", "stats", "watch", "cancel", "wait", "actions"]

    @Test("a close name is suggested; a far or short one is not", arguments: [
        ("stauts", "status" as String?),
        ("histroy", "history"),
        ("rnu", "run"),
        ("Status", "status"),
        ("canel", "cancel"),
        ("action", "actions"),
        ("stat", "stats"),
        ("ls", nil),
        ("x", nil),
        ("deploy", nil),
        ("", nil),
        (String(repeating: "s", count: 10_000), nil),
    ])
    func closest(typed: String, expected: String?) {
        #expect(Suggestion.closest(to: typed, among: Self.commands) == expected)
    }

    @Test("ties go to the first known name; a closer later one wins")
    func ties() {
        #expect(Suggestion.closest(to: "bat", among: ["cat", "hat", "bats"]) == "cat")
        #expect(Suggestion.closest(to: "bats", among: ["cats", "bats!", "bats"]) == "cats")
        #expect(Suggestion.closest(to: "deplyo", among: ["deploy-all", "deploy"]) == "deploy")
        #expect(Suggestion.closest(to: "status", among: ["status"]) == nil)
    }

    @Test("the words of a suggestion quote the name")
    func words() {
        #expect(Suggestion.didYouMean("deplyo", among: ["backup", "deploy"]) == #"did you mean "deploy"?"#)
        #expect(Suggestion.didYouMean("zzz", among: ["backup", "deploy"]) == nil)
    }
}
