/// An RFC 6901 JSON Pointer ("/ref", "/repository/full_name", "/a~1b" for the key "a/b"): where a
/// hook finds a param's value in the request's JSON body.
public struct JSONPointer: Sendable, Equatable, CustomStringConvertible {
    /// The reference tokens, unescaped (`~1` is `/`, `~0` is `~`).
    public let tokens: [String]
    public let description: String

    /// Why a text is no JSON Pointer.
    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    /// Parses a pointer: empty (the whole document), or `/` followed by tokens in which `~` is
    /// only ever `~0` or `~1`.
    public init(_ text: String) throws(Invalid) {
        description = text
        guard !text.isEmpty else { tokens = []; return }
        guard text.hasPrefix("/") else { throw Invalid(description: "a JSON Pointer starts with \"/\" (RFC 6901), not \(text.prefix(1))") }
        var tokens: [String] = []
        for raw in text.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            tokens.append(try Self.unescape(raw))
        }
        self.tokens = tokens
    }

    static func unescape(_ raw: Substring) throws(Invalid) -> String {
        var out = ""
        var iterator = raw.makeIterator()
        while let character = iterator.next() {
            guard character == "~" else { out.append(character); continue }
            switch iterator.next() {
            case "0": out.append("~")
            case "1": out.append("/")
            default: throw Invalid(description: "\"~\" in a JSON Pointer must be \"~0\" or \"~1\"")
            }
        }
        return out
    }

    /// The value the pointer names: an object's member, or an array's element by its decimal
    /// index (no leading zeros, no `-`); nil where there is none.
    public func resolve(in document: Payload) -> Payload? {
        var value = document
        for token in tokens {
            switch value {
            case let .object(fields):
                guard let next = fields[token] else { return nil }
                value = next
            case let .array(items):
                guard let index = Self.index(token), index < items.count else { return nil }
                value = items[index]
            default:
                return nil
            }
        }
        return value
    }

    static func index(_ token: String) -> Int? {
        guard !token.isEmpty, token.utf8.count < 10, token.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
              token == "0" || !token.hasPrefix("0") else { return nil }
        return Int(token)
    }
}
