import BatonCore
import Testing

/// The writer's fast paths (issue 39) against what they replaced: a literal key appended as it is
/// writes what the escaping path writes, integers' digits at the edges, a map of one entry unsorted.
@Suite("JSONWriter: literal keys, integers and maps")
struct JSONWriterTests {
    @Test("a key named by a literal and the same name as a String write the same member, commas included")
    func literalKeys() {
        var literal = JSONWriter()
        literal.beginObject()
        literal.field("id", 7)
        literal.field("action", "deploy")
        literal.key("k")
        literal.bool(true)
        literal.endObject()
        var dynamic = JSONWriter()
        let names = ["id", "action", "k"]
        dynamic.beginObject()
        dynamic.field(names[0], 7)
        dynamic.field(names[1], "deploy")
        dynamic.key(names[2])
        dynamic.bool(true)
        dynamic.endObject()
        #expect(literal.text == #"{"id":7,"action":"deploy","k":true}"#)
        #expect(dynamic.text == literal.text)
    }

    @Test("a name that is not a literal is still escaped")
    func dynamicKeyEscaped() {
        var json = JSONWriter()
        let name = "a\"b"
        json.beginObject()
        json.field(name, "v")
        json.endObject()
        #expect(json.text == #"{"a\"b":"v"}"#)
    }

    @Test("integers at the edges are written as their decimal text",
          arguments: [Int64.min, -1, 0, 9, 10, 1_700_000_000_000_000, Int64.max])
    func integers(_ value: Int64) {
        var json = JSONWriter()
        json.int(value)
        #expect(json.text == String(value))
    }

    @Test("an unsigned integer past Int64's range keeps every digit")
    func largeUnsigned() {
        var json = JSONWriter()
        json.int(UInt64.max)
        #expect(json.text == "18446744073709551615")
    }

    @Test("a string map is written with its keys sorted, whatever its size", arguments: [0, 1, 3])
    func stringMaps(_ count: Int) {
        let map = Dictionary(uniqueKeysWithValues: ["c", "a", "b"].prefix(count).map { ($0, $0.uppercased()) })
        var json = JSONWriter()
        json.stringMap(map)
        let expected = ["a", "b", "c"].filter { map[$0] != nil }.map { #""\#($0)":"\#($0.uppercased())""# }.joined(separator: ",")
        #expect(json.text == "{\(expected)}")
    }
}
