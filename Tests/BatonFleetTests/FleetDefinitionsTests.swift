import BatonCore
@testable import BatonFleet
import Testing

/// Which actions differ between this host and the fleet's other live hosts.
@Suite("FleetDefinitions: actions defined otherwise on another host")
struct FleetDefinitionsTests {
    @Test("only actions both hosts define, with different fingerprints; sorted by action, then host")
    func mismatches() {
        let mine = ["deploy": "aaaa", "backup": "bbbb", "only-here": "cccc"]
        let others: [(host: String, actions: [String: String])] = [
            ("web-3", ["deploy": "ffff", "backup": "bbbb"]),
            ("web-2", ["deploy": "eeee", "only-there": "dddd"]),
        ]
        #expect(FleetDefinitions.mismatches(mine: mine, others: others) == [
            .init(action: "deploy", host: "web-2", mine: "aaaa", theirs: "eeee"),
            .init(action: "deploy", host: "web-3", mine: "aaaa", theirs: "ffff"),
        ])
        #expect(FleetDefinitions.mismatches(mine: mine, others: [("web-2", [:])]).isEmpty)
    }

    @Test("the sentence names the action, the host and what it means")
    func sentence() {
        let text = FleetDefinitions.Mismatch(action: "deploy", host: "web-2", mine: "aaaa", theirs: "eeee").description
        #expect(text.contains("deploy") && text.contains("web-2") && text.contains("aaaa") && text.contains("eeee") && text.contains("not shared"))
    }
}
