@testable import BatonFleet
import Testing

@Suite("Fleet: bytes as hex text, a buffer at a time")
struct PGHexTests {
    @Test("every byte round-trips; the digits are the output path's; either case decodes; an odd last digit is dropped")
    func roundTrip() {
        let bytes = (0..<3).flatMap { _ in (0...255).map(UInt8.init) }
        let text = PGHex.encode(bytes)
        #expect(text == FleetJournal.hex(bytes))
        #expect(PGHex.decode(text) == bytes)
        #expect(PGHex.decode("00FFa0") == [0, 255, 160])
        #expect(PGHex.decode("abc") == [0xab])
        #expect(PGHex.encode([]) == "" && PGHex.decode("").isEmpty)
    }
}
