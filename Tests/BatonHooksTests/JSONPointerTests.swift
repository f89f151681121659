import BatonHooks
import Testing

@Suite("JSON Pointer (RFC 6901)")
struct JSONPointerTests {
    /// RFC 6901 section 5's document.
    static let document = Payload.read(Array(#"""
    {"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5, "k\"l": 6, " ": 7, "m~n": 8,
     "n": null, "t": true, "x": 1.5, "big": 12345678901234}
    """#.utf8))!

    @Test("RFC 6901's examples resolve as section 5 says", arguments: [
        ("/foo/0", Payload.string("bar")), ("/", .integer(0)), ("/a~1b", .integer(1)), ("/c%d", .integer(2)), ("/e^f", .integer(3)),
        ("/g|h", .integer(4)), (#"/i\j"#, .integer(5)), (#"/k"l"#, .integer(6)), ("/ ", .integer(7)), ("/m~0n", .integer(8)),
        ("/foo/1", .string("baz")),
    ])
    func rfcExamples(_ text: String, _ expected: Payload) throws {
        #expect(try JSONPointer(text).resolve(in: Self.document) == expected)
    }

    @Test("the empty pointer is the whole document")
    func whole() throws {
        #expect(try JSONPointer("").resolve(in: Self.document) == Self.document)
    }

    @Test("a pointer to nothing resolves to nothing", arguments: ["/missing", "/foo/2", "/foo/01", "/foo/-", "/foo/x", "/foo/0/deeper", "/n/x"])
    func nothing(_ text: String) throws {
        #expect(try JSONPointer(text).resolve(in: Self.document) == nil)
    }

    @Test("~01 is ~1 once unescaped, not /")
    func escapeOrder() throws {
        #expect(try JSONPointer("/~01").tokens == ["~1"])
    }

    @Test("a text that is no pointer is refused", arguments: ["ref", "/a~2", "/a~", "#/ref"])
    func invalid(_ text: String) {
        #expect(throws: JSONPointer.Invalid.self) { try JSONPointer(text) }
    }

    @Test("params take strings, numbers and booleans as JSON writes them; never null, objects or arrays", arguments: [
        ("/foo/0", "bar" as String?), ("/big", "12345678901234"), ("/x", "1.5"), ("/t", "true"), ("/n", nil), ("/foo", nil),
    ])
    func paramText(_ text: String, _ expected: String?) throws {
        #expect(try JSONPointer(text).resolve(in: Self.document)?.paramText == expected)
    }

    @Test("a body that is not JSON reads as nothing")
    func notJSON() {
        #expect(Payload.read(Array("payload=%7B%7D".utf8)) == nil)
        #expect(Payload.read([]) == nil)
    }
}
