import BatonCore
import Testing

@Suite("Phase transitions")
struct PhaseTests {
    static let legal: Set<String> = [
        "nil>queued", "queued>queued", "queued>loading", "queued>cancelled", "queued>failure",
        "loading>success", "loading>failure", "loading>cancelled", "loading>retrying", "loading>queued",
        "retrying>loading", "retrying>failure", "retrying>cancelled", "retrying>queued",
    ]

    static let pairs: [(Phase?, Phase)] = ([nil] + Phase.allCases.map(Optional.some)).flatMap { from in
        Phase.allCases.map { (from, $0) }
    }

    @Test("every pair of phases is legal exactly when the table says so", arguments: pairs)
    func table(from: Phase?, to: Phase) {
        let name = "\(from?.rawValue ?? "nil")>\(to.rawValue)"
        #expect(Phase.allows(from: from, to: to) == Self.legal.contains(name), "\(name)")
    }

    @Test("nothing leaves a terminal phase")
    func terminalIsFinal() {
        for from in Phase.allCases where from.isTerminal {
            for to in Phase.allCases { #expect(!Phase.allows(from: from, to: to)) }
        }
    }
}
