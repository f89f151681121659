import BatonHooks
import Testing

@Suite("Delivery ids and forwarded addresses")
struct DeliveryTableTests {
    @Test("the first request goes on; others wait for its run, later ones get it at once")
    func singleFlight() {
        var table = DeliveryTable<Int>(limit: 2)
        let key = DeliveryTable<Int>.key(hook: "gh", delivery: "d1")
        #expect(table.begin(key, 1) == .first)
        #expect(table.begin(key, 2) == .waiting)
        #expect(table.begin(key, 3) == .waiting)
        #expect(table.begin(DeliveryTable<Int>.key(hook: "other", delivery: "d1"), 9) == .first)
        #expect(table.finish(key, run: 7) == [2, 3])
        #expect(table.begin(key, 4) == .known(7))
        #expect(table.finish(key, run: 8) == [])
        #expect(table.begin(key, 5) == .known(7))
    }

    @Test("a first request that made no run lets the next one try again")
    func failedFirst() {
        var table = DeliveryTable<Int>()
        #expect(table.begin("k", 1) == .first)
        #expect(table.begin("k", 2) == .waiting)
        #expect(table.finish("k", run: nil) == [2])
        #expect(table.begin("k", 3) == .first)
    }

    @Test("past its limit the table forgets the oldest runs (the history still has them)")
    func limit() {
        var table = DeliveryTable<Int>(limit: 2)
        for (index, key) in ["a", "b", "c"].enumerated() {
            #expect(table.begin(key, 0) == .first)
            _ = table.finish(key, run: Int64(index))
        }
        #expect(table.begin("a", 0) == .first)
        #expect(table.begin("b", 0) == .known(1))
        #expect(table.begin("c", 0) == .known(2))
    }

    @Test("X-Forwarded-For is believed from trusted proxies only, from its right end, without a hop's port", arguments: [
        ("203.0.113.7", ["198.51.100.1"], "203.0.113.7"),
        ("127.0.0.1", ["198.51.100.1"], "198.51.100.1"),
        ("127.0.0.1", ["1.2.3.4, 198.51.100.1"], "198.51.100.1"),
        ("127.0.0.1", ["1.2.3.4, 198.51.100.1, 10.0.0.2"], "198.51.100.1"),
        ("127.0.0.1", ["1.2.3.4", "198.51.100.1"], "198.51.100.1"),
        ("127.0.0.1", ["evil name, 10.0.0.2"], "10.0.0.2"),
        ("127.0.0.1", ["2001:db8::1"], "2001:db8::1"),
        ("127.0.0.1", ["198.51.100.1:8080"], "198.51.100.1"),
        ("127.0.0.1", ["10.0.0.5:8080"], "10.0.0.5"),
        ("127.0.0.1", ["1.2.3.4, 10.0.0.2:443"], "1.2.3.4"),
        ("127.0.0.1", ["[2001:db8::1]:443"], "2001:db8::1"),
        ("127.0.0.1", ["[::1]:8080"], "::1"),
        ("127.0.0.1", ["[2001:db8::7]"], "2001:db8::7"),
        ("127.0.0.1", ["2001:db8::1:8080"], "2001:db8::1:8080"),
        ("127.0.0.1", ["10.0.0.9:port, 10.0.0.2"], "10.0.0.2"),
        ("127.0.0.1", ["10.0.0.9:123456"], "127.0.0.1"),
        ("127.0.0.1", ["[10.0.0.9]:80"], "127.0.0.1"),
        ("127.0.0.1", ["[2001:db8::1]x"], "127.0.0.1"),
        ("127.0.0.1", [], "127.0.0.1"),
        ("127.0.0.1", ["<script>"], "127.0.0.1"),
    ] as [(String, [String], String)])
    func forwarded(_ peer: String, _ fields: [String], _ expected: String) {
        #expect(ClientAddress.of(peer: peer, forwardedFor: fields, trusted: ["127.0.0.1", "10.0.0.2"]) == expected)
    }

    @Test("a proxy known by its user is trusted whatever its address; the hops after it still by theirs", arguments: [
        (true, ["198.51.100.1"], "198.51.100.1"),
        (true, ["198.51.100.1, 10.0.0.2"], "198.51.100.1"),
        (false, ["198.51.100.1"], "127.0.0.5"),
        (true, [], "127.0.0.5"),
    ] as [(Bool, [String], String)])
    func forwardedByUser(_ peerTrusted: Bool, _ fields: [String], _ expected: String) {
        #expect(ClientAddress.of(peer: "127.0.0.5", forwardedFor: fields, trusted: ["10.0.0.2"], peerTrusted: peerTrusted) == expected)
    }
}
