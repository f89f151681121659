import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// Case beyond ASCII, one host's side (the fleet's: `FleetSearchTests.caseBeyondASCII`, the same
/// table): a search ignores case as Swift's `lowercased()` (Unicode's lowercase mapping) does,
/// in output and param values alike, with the index and without: "é" finds "É", "straße" finds
/// "STRAẞE", and "STRASSE" does not find "Straße" (lowercasing is not case folding: ß is not ss).
@Suite("Output search: case beyond ASCII")
struct SearchCaseTests {
    /// Run 1's output, run 2's, and run 3's params.
    static let output = ["Élan vital à la STRAẞE, café\n", "strasse 12\n"]
    static let params = ["city": "ÉVIAN"]

    /// What each text finds, newest first (the same table as the fleet's).
    static let cases: [(text: String, runs: [Int64])] = [
        ("élan", [1]), ("ÉLAN VITAL", [1]), ("CAFÉ", [1]), ("straße", [1]), ("STRAẞE", [1]),
        ("STRASSE", [2]), ("évian", [3]), ("Évian", [3]), ("é", [3, 1]), ("É", [3, 1]),
    ]

    @Test("é finds É, straße finds STRAẞE, STRASSE finds strasse only: in output and params, with the index and without", arguments: [true, false])
    func beyondASCII(index: Bool) async throws {
        let dir = TemporaryDirectory()
        let store = try OutputSearchTests.open(dir.file("h.sqlite"), index: index)
        defer { store.close() }
        try await OutputSearchTests.run(store, 1, output: [Self.output[0]])
        try await OutputSearchTests.run(store, 2, output: [Self.output[1]])
        try await OutputSearchTests.run(store, 3, params: Self.params, output: ["nothing here\n"])
        for (text, runs) in Self.cases {
            let found = try await OutputSearchTests.search(store, text)
            #expect(found.map(\.run.id) == runs, "\(text)")
            if let byParams = found.first(where: { $0.run.id == 3 }) { #expect(byParams.params == ["city"], "\(text)") }
            for match in found where match.run.id != 3 { #expect(match.lineCount == 1, "\(text): \(match)") }
        }
    }

    @Test("the LIKE pattern that names the runs which may hold a text beyond ASCII: its lowercased ASCII pieces, cut at i and k")
    func widePattern() {
        #expect(SearchText("Straße").widePattern == "%stra%e%")
        #expect(SearchText("É").widePattern == "%")
        #expect(SearchText("100% Café").widePattern == "%100\\% caf%")
        #expect(SearchText("KİLN é").pieces == ["ln "])
        #expect(SearchText("plain_ASCII").widePattern == "%plain\\_ASCII%")
    }
}
