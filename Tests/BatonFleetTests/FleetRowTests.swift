@testable import BatonFleet
import BatonCore
import Testing

@Suite("Fleet: values stored in rows")
struct FleetRowTests {
    @Test("a key slot's draining set round-trips through PostgreSQL's array text")
    func slotRows() {
        let slot = KeySlot(row: ["7", nil, "{3,5}"])
        #expect(slot == KeySlot(holder: 7, followUp: nil, draining: [3, 5]))
        #expect(slot.drainingText == "{3,5}")
        #expect(KeySlot(row: [nil, nil, "{}"]).isEmpty)
    }

    @Test("a key slot's line round-trips in its order (schema 16); a row read without it keeps its one follow-up")
    func lineRows() {
        let slot = KeySlot(row: ["7", "9", "{}", "{9,4,12}"])
        #expect(slot == KeySlot(holder: 7, line: [9, 4, 12]))
        #expect(slot.rowTexts == ["7", "9", "{}", "{9,4,12}"])
        #expect(KeySlot(row: ["7", "9", "{}"]) == KeySlot(holder: 7, line: [9]))
        #expect(KeySlot(row: ["7", "9", "{}", "{}"]) == KeySlot(holder: 7, line: [9]), "a row from before the line's column was filled")
        #expect(KeySlot(holder: 7).rowTexts == ["7", nil, "{}", "{}"])
    }
}
