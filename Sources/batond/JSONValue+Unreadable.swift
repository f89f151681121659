import FoundationEssentials

/// What is wrong with a string the JSON5 reader refused. Foundation says only "The given data was
/// not valid JSON" of it; its own error inside names the case and where (`invalidEscapedNullValue(
/// location: …(line: 3, column: 14, …))`), which is read here for the words, and left out when
/// a later Foundation words it otherwise.
struct UnreadableString: Equatable {
    /// `a NUL (\u0000)`, `half of a surrogate pair`, …
    var what: String
    /// Why a config cannot take it, or how to write it instead.
    var why: String
    /// ` (line 3, column 14)`, or empty when the error does not say.
    var place: String

    init(_ error: any Error) {
        let text = String(describing: error)
        switch text {
        case let text where text.hasPrefix("invalidEscapedNullValue") || text.hasPrefix("unescapedControlCharacterInString(ascii: 0,"):
            (what, why) = ("a NUL (\\u0000)", "a config string cannot hold one")
        case let text where text.hasPrefix("unescapedControlCharacterInString"):
            (what, why) = ("a control character written as is", "write it as an escape, such as \\t or \\u0001")
        case let text where text.hasPrefix("couldNotCreateUnicodeScalarFromUInt32") || text.hasPrefix("expectedLowSurrogate"):
            (what, why) = ("half of a surrogate pair (\\uD800 to \\uDFFF)", "write the character itself, or both halves")
        case let text where text.hasPrefix("invalidHexDigitSequence"):
            (what, why) = ("a \\u escape without four hex digits", "write \\u and four hex digits, such as \\u00e9")
        case let text where text.hasPrefix("unexpectedEscapedCharacter"):
            (what, why) = ("an unknown escape", "write a backslash as \\\\")
        default:
            (what, why) = ("something the JSON5 reader cannot read", "write the string without it")
        }
        let numbers = text.firstMatch(of: #/line: (\d+), column: (\d+)/#)
        place = numbers.map { " (line \($0.1), column \($0.2))" } ?? ""
    }

    /// The problem at the string's field: `a NUL (\u0000) in the string (line 1, column 29): …`.
    var message: String { "\(what) in the string\(place): \(why)" }
}
