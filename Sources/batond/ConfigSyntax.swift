import BatonCore

/// Where a config that Foundation's JSON5 reader refused first goes wrong, and what was expected
/// there: that reader says only "The given data was not valid JSON", for an empty file, an
/// unclosed string and a missing comma alike. Run only once the reader has refused the text, so
/// it follows what that reader accepts rather than the letter of JSON5 (which it is close to):
/// ASCII blanks only; strings may hold line breaks; a number is any run of letters, digits, signs
/// and dots that starts like one, or like Infinity or NaN (`I`, `N`: the reader leaves what it
/// means to the field); in a string, `\u` takes the four characters after it and `\x` two,
/// which may not hold its closing quote (whether they are hex is left to the field). Bytes are
/// valid UTF-8 here (`Config.parse` checks first). No recursion: the open objects and arrays are
/// a stack, so no nesting can exhaust the thread's stack (and it stops where the reader does, at 512).
struct ConfigSyntax {
    /// A syntax error: the byte it is at, and what is wrong there.
    struct Problem: Equatable {
        /// The byte it is at; nil for an empty file (there is no place to show).
        var offset: Int?
        var message: String
        /// Whether Foundation's reader would trap on it rather than refuse it (`1e-`): such a text
        /// is refused before the reader sees it.
        var traps = false
    }

    /// A number Foundation's reader would trap on, where it comes before any syntax error (after
    /// one, the reader refuses the text before it decodes a number); nil when there is none.
    static func trap(in bytes: [UInt8]) -> Problem? {
        firstProblem(in: bytes).flatMap { $0.traps ? $0 : nil }
    }

    /// The first syntax error in `bytes`, or nil when none is found (the reader refused it for a
    /// reason of its own, such as nesting deeper than it goes).
    static func firstProblem(in bytes: [UInt8]) -> Problem? {
        var syntax = ConfigSyntax(bytes: bytes)
        return syntax.run()
    }

    /// An object or array not yet closed.
    struct Container {
        var isObject: Bool
        var start: Int
        /// What it adds to the path of its parent: `.hello`, `[2]`; "" for the whole file.
        var component: String
        /// Objects: the field read last; arrays: the items read so far.
        var key = ""
        var items = 0
    }

    /// What may come next.
    enum Expect {
        /// The file's value, or a field's.
        case value
        /// In an array: an item, or `]`.
        case item
        /// In an object: a field name, or `}`.
        case key
        /// After a field name.
        case colon
        /// After a value in an object or array: `,`, or its closing bracket.
        case next
        /// After the file's value: nothing but blanks and comments.
        case end
    }

    /// The deepest nesting of objects and arrays that Foundation's reader reads.
    static let maxDepth = 512

    let bytes: [UInt8]
    var index = 0
    var open: [Container] = []
    var expect = Expect.value
    /// Whether a comment was seen (an empty file of comments is still empty).
    var sawComment = false
    /// Where the last string value started, when it ran across lines: the likely place of a missing quote.
    var lastMultilineString: Int?
    /// A `\u` (or `\x`) of the last string read with fewer than four (two) characters before the
    /// string's end: the reader refuses those, whatever the characters are.
    var shortEscape: Int?
    /// The last byte of the file's value, once it is read.
    var valueEnd = 0

    private init(bytes: [UInt8]) {
        self.bytes = bytes
        // A byte order mark may start the file.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
    }

    private mutating func run() -> Problem? {
        while true {
            if let problem = skipBlanks() { return problem }
            guard index < bytes.count else { return atEnd() }
            let problem: Problem? = switch expect {
            case .value, .item: value()
            case .key: key()
            case .colon: colon()
            case .next: next()
            case .end: afterEnd()
            }
            if let problem { return problem }
        }
    }

    /// A value, or in an array the `]` that may take an item's place.
    private mutating func value() -> Problem? {
        let byte = bytes[index]
        switch byte {
        case 0x7B, 0x5B: // { [
            guard open.count < Self.maxDepth else {
                return Problem(offset: index, message: "nested more than \(Self.maxDepth) deep: the JSON5 reader reads at most \(Self.maxDepth) levels of objects and arrays")
            }
            open.append(Container(isObject: byte == 0x7B, start: index, component: nextComponent))
            expect = byte == 0x7B ? .key : .item
            index += 1
            return nil
        case 0x5D where expect == .item: // ]
            return close()
        case 0x22, 0x27: // " '
            let start = index
            guard let spansLines = skipString() else { return unclosedString(start) }
            if let escape = shortEscape { return short(escape) }
            lastMultilineString = spansLines ? start : nil
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "I"), UInt8(ascii: "N"):
            // `I` and `N` start Infinity and NaN: the reader takes any run from them as a number.
            let start = index
            index += 1
            while index < bytes.count, isNumberPart(bytes[index]) { index += 1 }
            if Self.hasBareExponent(bytes[start..<index]) {
                let number = String(decoding: bytes[start..<index], as: UTF8.self)
                return Problem(offset: start, message: "\(number) is not a number: an exponent needs digits after its sign, such as 1e-3", traps: true)
            }
            // A file that is one number, ending with it: the reader was seen (twice, under fuzzing, not
            // reproducibly) to trap reading it, as if past the end. A config is an object anyway.
            if open.isEmpty && index == bytes.count {
                return Problem(offset: start, message: "expected an object, got a number: a config is an object such as { actions: { … } }", traps: true)
            }
            lastMultilineString = nil
        case _ where identifierLength(at: index, first: true) != nil:
            let start = index
            skipIdentifier()
            let word = String(decoding: bytes[start..<index], as: UTF8.self)
            guard ["true", "false", "null"].contains(word) else {
                return Problem(offset: start, message: "expected \(valueWords) for \(valueName), found \(word.prefix(40)): text needs quotes (\(Action.quoted(word)))")
            }
            lastMultilineString = nil
        default:
            return Problem(offset: index, message: "expected \(valueWords) for \(valueName), found \(found())")
        }
        valueDone()
        return nil
    }

    /// A field name, or the `}` that may take its place.
    private mutating func key() -> Problem? {
        let byte = bytes[index]
        let start = index
        if byte == 0x7D { return close() }
        if byte == 0x22 || byte == 0x27 {
            guard skipString() != nil else { return unclosedString(start) }
            if let escape = shortEscape { return short(escape) }
            open[open.count - 1].key = String(decoding: bytes[(start + 1)..<(index - 1)], as: UTF8.self)
        } else if identifierLength(at: index, first: true) != nil {
            skipIdentifier()
            if index < bytes.count, bytes[index] == 0x5C {
                return Problem(offset: index, message: "a backslash in an unquoted field name starts an escape such as \\u00e9: put the name in quotes")
            }
            open[open.count - 1].key = String(decoding: bytes[start..<index], as: UTF8.self)
        } else {
            let what = open.count == 1 ? "the config" : path(open.count)
            return Problem(offset: index, message: "expected a field name or '}' in \(what), found \(found())")
        }
        expect = .colon
        return nil
    }

    private mutating func colon() -> Problem? {
        guard bytes[index] == 0x3A else {
            return Problem(offset: index, message: "expected ':' after the field name \(Action.quoted(open[open.count - 1].key)), found \(found())")
        }
        index += 1
        expect = .value
        return nil
    }

    /// After a value in an object or array: `,` or the closing bracket.
    private mutating func next() -> Problem? {
        let top = open[open.count - 1]
        switch bytes[index] {
        case 0x2C:
            index += 1
            expect = top.isObject ? .key : .item
            return nil
        case top.isObject ? 0x7D : 0x5D:
            return close()
        default:
            let after = top.isObject ? "the value of \(path(open.count, then: top))" : "item \(top.items - 1) of \(open.count == 1 ? "the config" : path(open.count))"
            var message = "expected ',' or \(closing(of: top.isObject ? 0x7B : 0x5B)) after \(after), found \(found())"
            if let start = lastMultilineString {
                let place = ConfigError.Place(bytes, offset: start)
                message += " (the string that starts at line \(place.line), column \(place.column) runs across lines: is its closing quote missing?)"
            }
            return Problem(offset: index, message: message)
        }
    }

    private mutating func close() -> Problem? {
        index += 1
        _ = open.popLast()
        lastMultilineString = nil
        valueDone()
        return nil
    }

    private mutating func valueDone() {
        if open.isEmpty {
            expect = .end
            valueEnd = index - 1
            return
        }
        if !open[open.count - 1].isObject { open[open.count - 1].items += 1 }
        expect = .next
    }

    /// The file ends: fine after its value, else what it ends inside.
    private func atEnd() -> Problem? {
        guard let top = open.last else {
            if expect == .end { return nil }
            return Problem(offset: nil, message: "the file is empty\(sawComment ? " (it holds only comments)" : ""): "
                + "a config is an object such as { actions: { hello: { exec: [\"echo\", \"hello\"] } } }")
        }
        let place = ConfigError.Place(bytes, offset: top.start)
        let what = open.count == 1 ? "the config's \(top.isObject ? "object" : "array")" : path(open.count)
        return Problem(offset: bytes.count, message: "the file ends before \(what) is closed: expected \(closing(of: top.isObject ? 0x7B : 0x5B)) "
            + "to match the \(top.isObject ? "'{'" : "'['") at line \(place.line), column \(place.column)")
    }
}

extension ConfigSyntax {
    /// Past blanks and comments; a problem for a comment never closed or a lone `/`.
    private mutating func skipBlanks() -> Problem? {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D:
                index += 1
            case 0x2F where index + 1 < bytes.count && bytes[index + 1] == 0x2F:
                sawComment = true
                // To the end of the line: a line feed or, as the reader takes it, a carriage return.
                while index < bytes.count, bytes[index] != 0x0A, bytes[index] != 0x0D { index += 1 }
            case 0x2F where index + 1 < bytes.count && bytes[index + 1] == 0x2A:
                sawComment = true
                let start = index
                index += 2
                while index + 1 < bytes.count, !(bytes[index] == 0x2A && bytes[index + 1] == 0x2F) { index += 1 }
                guard index + 1 < bytes.count else { return Problem(offset: start, message: "this comment is never closed: expected */ before the end of the file") }
                index += 2
            case 0x2F:
                return Problem(offset: index, message: "expected a comment (// or /*) after '/'")
            default:
                return nil
            }
        }
        return nil
    }

    /// Past a string from its opening quote; whether it ran across lines, or nil when the file
    /// ends first. A backslash takes the character after it, `\u` four and `\x` two, whatever
    /// they are; a `\u` or `\x` whose characters would hold the closing quote (or the file's end)
    /// is kept in `shortEscape`, and the string ends there.
    private mutating func skipString() -> Bool? {
        let quote = bytes[index]
        var spansLines = false
        shortEscape = nil
        index += 1
        while index < bytes.count, bytes[index] != quote {
            if bytes[index] == 0x0A { spansLines = true }
            if bytes[index] == 0x5C, let digits = Self.escapeDigits(after: index, in: bytes) {
                let end = index + 2 + digits
                if end > bytes.count || bytes[(index + 2)..<end].contains(quote) {
                    shortEscape = index
                    return spansLines
                }
                index = end
                continue
            }
            index += bytes[index] == 0x5C ? 2 : 1
        }
        guard index < bytes.count else { return nil }
        index += 1
        return spansLines
    }

    private func unclosedString(_ start: Int) -> Problem {
        Problem(offset: start, message: "this string is never closed: expected \(bytes[start] == 0x22 ? "\"" : "'") before the end of the file")
    }

    /// How many characters the reader wants after the escape whose backslash is at `at` before
    /// the string's end: four for `\u`, two for `\x`; nil for any other escape.
    private static func escapeDigits(after at: Int, in bytes: [UInt8]) -> Int? {
        guard at + 1 < bytes.count else { return nil }
        return bytes[at + 1] == UInt8(ascii: "u") ? 4 : bytes[at + 1] == UInt8(ascii: "x") ? 2 : nil
    }

    /// The escape at `escape` has too few characters before its string's end.
    private func short(_ escape: Int) -> Problem {
        let (letter, count, example) = bytes[escape + 1] == UInt8(ascii: "u") ? ("u", "four", "\\u00e9") : ("x", "two", "\\x41")
        return Problem(offset: escape, message: "\\\(letter) needs \(count) hex digits before the string ends, such as \(example)")
    }

    private mutating func skipIdentifier() {
        while index < bytes.count, let length = identifierLength(at: index, first: false) { index += length }
    }
}
