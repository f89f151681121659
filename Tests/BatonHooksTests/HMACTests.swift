import BatonHooks
import Testing

@Suite("HMAC-SHA256 from libcrypto")
struct HMACTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        var name: String
        var key: [UInt8]
        var data: [UInt8]
        /// The expected digest in hex; RFC 4231's case 5 gives its first 128 bits only.
        var mac: String
        var testDescription: String { name }
    }

    static let block131 = [UInt8](repeating: 0xaa, count: 131)

    /// RFC 4231, section 4: the HMAC-SHA-256 results of its seven test cases.
    static let vectors: [Vector] = [
        Vector(name: "case 1", key: .init(repeating: 0x0b, count: 20), data: Array("Hi There".utf8),
               mac: "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        Vector(name: "case 2", key: Array("Jefe".utf8), data: Array("what do ya want for nothing?".utf8),
               mac: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        Vector(name: "case 3", key: .init(repeating: 0xaa, count: 20), data: .init(repeating: 0xdd, count: 50),
               mac: "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        Vector(name: "case 4", key: Array(1...25), data: .init(repeating: 0xcd, count: 50),
               mac: "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        Vector(name: "case 5 (truncated to 128 bits)", key: .init(repeating: 0x0c, count: 20), data: Array("Test With Truncation".utf8),
               mac: "a3b6167473100ee06e0c796c2955552b"),
        Vector(name: "case 6", key: block131, data: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
               mac: "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        Vector(name: "case 7", key: block131,
               data: Array("This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.".utf8),
               mac: "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test("RFC 4231's test cases", arguments: vectors)
    func rfc4231(_ vector: Vector) {
        let mac = HMAC.hex(HMAC.sha256(key: vector.key, message: vector.data))
        #expect(mac.count == 64)
        #expect(mac.hasPrefix(vector.mac))
    }

    @Test("GitHub's documented example of X-Hub-Signature-256")
    func githubExample() {
        let mac = HMAC.sha256(key: Array("It's a Secret to Everybody".utf8), message: Array("Hello, World!".utf8))
        #expect("sha256=" + HMAC.hex(mac) == "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17")
    }

    @Test("an empty key and an empty message have a digest too")
    func empty() {
        #expect(HMAC.hex(HMAC.sha256(key: [], message: [])) == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test("equal compares every byte, and the lengths")
    func equal() {
        let mac = HMAC.sha256(key: Array("k".utf8), message: Array("m".utf8))
        #expect(HMAC.equal(mac, mac))
        var flipped = mac
        flipped[31] ^= 1
        #expect(!HMAC.equal(mac, flipped))
        flipped = mac
        flipped[0] ^= 0x80
        #expect(!HMAC.equal(mac, flipped))
        #expect(!HMAC.equal(mac, Array(mac.dropLast())))
        #expect(!HMAC.equal([], mac))
        #expect(HMAC.equal([], []))
    }

    @Test("hex text reads back in either case, and nothing else does", arguments: [
        ("00ff10Ab", [0x00, 0xff, 0x10, 0xab] as [UInt8]?), ("", []), ("abc", nil), ("zz", nil), ("0x00", nil), (" 00", nil),
    ])
    func hex(_ text: String, _ bytes: [UInt8]?) {
        #expect(HMAC.bytes(hex: Substring(text)) == bytes)
        if let bytes { #expect(HMAC.hex(bytes) == text.lowercased()) }
    }
}
