@testable import BatonFleet
import BatonCore
import Testing

@Suite("Fleet migration 2: key slots follow their runs' new keys")
struct FleetStoredKeysTests {
    @Test("a slot becomes the slots of its runs' keys", arguments: [
        // Unchanged keys: the slot stays as it is.
        (KeySlot(holder: 1, followUp: 2, draining: [3]), [:], ["old": KeySlot(holder: 1, followUp: 2, draining: [3])]),
        // One param set under one old key: the whole slot moves.
        (KeySlot(holder: 1, followUp: 2), [1: "new", 2: "new"], ["new": KeySlot(holder: 1, followUp: 2)]),
        // The follow-up was of other params: it holds its own key and need not wait.
        (KeySlot(holder: 1, followUp: 2), [1: "a", 2: "b"], ["a": KeySlot(holder: 1), "b": KeySlot(holder: 2)]),
        // A replaced run still stopping keeps its key waiting only if it is of the same params.
        (KeySlot(holder: 4, draining: [2, 3]), [4: "a", 2: "a", 3: "b"],
         ["a": KeySlot(holder: 4, draining: [2]), "b": KeySlot(draining: [3])]),
        // A run the table no longer has stays under the old key.
        (KeySlot(holder: 1, followUp: 9), [1: "a"], ["a": KeySlot(holder: 1), "old": KeySlot(holder: 9)]),
    ] as [(KeySlot, [Int64: String], [String: KeySlot])])
    func split(slot: KeySlot, keyOf: [Int64: String], slots: [String: KeySlot]) {
        #expect(FleetStoredKeys.split(slot, key: "old", keyOf: keyOf) == slots)
    }
}
