import BatonEngine
import Testing

/// The one FNV-1a (`FNV1a`): the published 64-bit values, and the same hash whether the bytes
/// come at once or in pieces (the fingerprint and the advisory locks add theirs in pieces).
@Suite("FNV1a: FNV-1a 64, the published values")
struct FNV1aTests {
    @Test("known vectors: the offset basis for no bytes, \"a\", \"foobar\"")
    func vectors() {
        #expect(FNV1a.hash([UInt8]()) == 0xcbf2_9ce4_8422_2325)
        #expect(FNV1a.hash("a".utf8) == 0xaf63_dc4c_8601_ec8c)
        #expect(FNV1a.hash("foobar".utf8) == 0x8594_4171_f739_67e8)
    }

    @Test("bytes added in pieces hash as the same bytes at once")
    func pieces() {
        var hasher = FNV1a()
        #expect(hasher.value == FNV1a.hash([UInt8]()))
        hasher.add("foo".utf8)
        hasher.add(CollectionOfOne(UInt8(ascii: "b")))
        hasher.add("ar".utf8)
        #expect(hasher.value == FNV1a.hash("foobar".utf8))
    }
}
