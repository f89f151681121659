@testable import BatonEngine
import BatonRuntime
import Testing

/// `IDMap`, the loop's tables keyed by run id and token with a cheap hash (issue 39): a
/// `Dictionary` in behaviour, checked against one.
@Suite("IDMap: a dictionary of ids with a cheap hash")
struct IDMapTests {
    /// A key that counts which of its hashes `Dictionary` asks for: `HashedID`'s, through it.
    struct Probe: Hashable {
        static let calls = Locked<(raw: Int, hasher: Int)>((0, 0))
        let key: IDMap<Int64, Int>.HashedID

        func hash(into hasher: inout Hasher) {
            Self.calls.withLock { $0.hasher += 1 }
            key.hash(into: &hasher)
        }

        func _rawHashValue(seed: Int) -> Int {
            Self.calls.withLock { $0.raw += 1 }
            return key._rawHashValue(seed: seed)
        }
    }

    @Test("Dictionary hashes the key by its _rawHashValue(seed:), never by hash(into:)")
    func cheapHash() {
        var table: [Probe: Int] = [:]
        for id in Int64(0)..<100 { table[Probe(key: .init(id))] = Int(id) }
        for id in Int64(0)..<100 { #expect(table[Probe(key: .init(id))] == Int(id)) }
        let calls = Probe.calls.withLock { $0 }
        #expect(calls.raw >= 200 && calls.hasher == 0, "\(calls)")
        let key = IDMap<Int64, Int>.HashedID(42)
        // The stdlib's own `hashValue` goes through `_rawHashValue(seed: 0)`: the cheap one.
        #expect(key.hashValue == key._rawHashValue(seed: 0))
        #expect(key._rawHashValue(seed: 1) != key._rawHashValue(seed: 2))
    }

    @Test("ids that differ only in their high bits share a bucket whatever the seed: the keys must be batond's own")
    func highBits() {
        // Their low 40 bits equal: so are the low 40 of the product and the low 8 of the fold.
        let ids = (0..<Int64(16)).map { 12_345 + ($0 << 40) }
        for seed in [0, 1, 0x5EED, -1] {
            #expect(Set(ids.map { IDMap<Int64, Int>.HashedID($0)._rawHashValue(seed: seed) & 255 }).count == 1)
        }
        // And a real table (sized first: a resize moves them) placed them in one run of buckets, in
        // the order they came (a rotation of it, where the run wraps round its end): one chain.
        var table = [IDMap<Int64, Int>.HashedID: Int](minimumCapacity: ids.count)
        for id in ids { table[.init(id)] = 0 }
        let order = table.keys.map(\.id), start = order.firstIndex(of: ids[0]) ?? 0
        #expect(Array(order[start...] + order[..<start]) == ids)
    }

    @Test("consecutive and strided ids fill the buckets of a power-of-two table as a random hash would",
          arguments: [1, 2, 3, 64, 1 << 20])
    func spread(stride: Int64) {
        // 256 keys in 256 buckets: a random hash fills 162 on average (1 - 1/e), rarely under 145.
        for seed in [0, 1, 0x5EED, -1] {
            let buckets = Set((0..<Int64(256)).map { IDMap<Int64, Int>.HashedID(1_000 + $0 * stride)._rawHashValue(seed: seed) & 255 })
            #expect(buckets.count >= 140, "stride \(stride), seed \(seed): \(buckets.count) of 256 buckets")
        }
    }

    @Test("each operation as Dictionary's, over a seeded random walk of inserts, changes, removals and reads")
    func againstDictionary() {
        var random = SplitMix(seed: 39)
        var map: IDMap<Int64, Int> = [:]
        var reference: [Int64: Int] = [:]
        for step in 0..<20_000 {
            // Ids mostly increasing (as batond hands them out), some far apart, some reused.
            let id = Int64(step / 3) + (random.next() % 7 == 0 ? Int64(bitPattern: random.next() >> 20) : 0)
            let value = Int(truncatingIfNeeded: random.next() % 1_000)
            switch random.next() % 8 {
            case 0, 1: map[id] = value; reference[id] = value
            case 2: map[id, default: 0] += value; reference[id, default: 0] += value
            case 3: #expect(map.removeValue(forKey: id) == reference.removeValue(forKey: id))
            case 4: map[id] = nil; reference[id] = nil
            case 5:
                if let index = map.index(forKey: id) { map.values[index] += 1 }
                if reference[id] != nil { reference[id]! += 1 }
            case 6: map[id]? -= 1; reference[id]? -= 1
            default: #expect(map[id] == reference[id])
            }
            if step % 2_000 == 0 { #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key, $0.value) }) == reference) }
        }
        #expect(map.count == reference.count && map.isEmpty == reference.isEmpty)
        #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key, $0.value) }) == reference)
        #expect(map.keys.sorted() == reference.keys.sorted())
        #expect(map.values.sorted() == reference.values.sorted())
        #expect(Set(map.filter { $0.value % 2 == 0 }.keys) == Set(reference.filter { $0.value % 2 == 0 }.keys))
        map.removeAll(keepingCapacity: true)
        #expect(map.isEmpty && map[1] == nil)
    }

    @Test("a literal, equality, and unsigned ids (tokens)")
    func literalAndTokens() {
        let map: IDMap<UInt64, String> = [1: "one", UInt64.max: "max"]
        #expect(map[1] == "one" && map[UInt64.max] == "max" && map[2] == nil)
        var copy = map
        #expect(copy == map)
        copy[2] = "two"
        #expect(copy != map && map.count == 2 && copy.count == 3)
    }
}
