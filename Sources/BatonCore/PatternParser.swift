/// A parsed param pattern: the syntax tree that `PatternProgram` compiles.
indirect enum PatternNode: Equatable, Sendable {
    case empty
    case set(ScalarSet)
    case assertion(PatternAssertion)
    case concat([PatternNode])
    case alternation([PatternNode])
    /// `max` nil: unbounded.
    case repetition(PatternNode, min: Int, max: Int?)

    /// Whether the node repeats something without an upper bound, or contains such a repetition.
    var repeatsUnbounded: Bool {
        switch self {
        case .empty, .set, .assertion: false
        case let .concat(nodes), let .alternation(nodes): nodes.contains { $0.repeatsUnbounded }
        case let .repetition(body, _, max): max == nil || body.repeatsUnbounded
        }
    }

    /// Whether a repetition with more than one iteration contains an unbounded repetition:
    /// `(a+)+`, `(a*){2,}`, the shape that makes backtracking engines take exponential time.
    var hasNestedQuantifier: Bool {
        switch self {
        case .empty, .set, .assertion: false
        case let .concat(nodes), let .alternation(nodes): nodes.contains { $0.hasNestedQuantifier }
        case let .repetition(body, _, max):
            ((max ?? 2) > 1 && body.repeatsUnbounded) || body.hasNestedQuantifier
        }
    }
}

/// A zero-width test at a position.
enum PatternAssertion: Equatable, Sendable {
    case start, end, wordBoundary, notWordBoundary
}

/// Reads the pattern syntax people know from PCRE, JavaScript and Swift's `Regex`, minus what
/// cannot be matched in linear time (backreferences, lookaround, possessive quantifiers): those
/// are refused with a message that says so.
struct PatternParser {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var caseless = false
    /// Bounds the nesting of groups, so that parsing cannot exhaust the stack.
    private var depth = 0

    static let maxRepeat = 1_000
    static let maxDepth = 100

    init(_ source: String) {
        scalars = Array(source.unicodeScalars)
    }

    mutating func parse() throws(PatternError) -> PatternNode {
        let node = try alternation()
        if index < scalars.count { throw error("unmatched )") }
        return node
    }

    private mutating func alternation() throws(PatternError) -> PatternNode {
        var branches = [try concatenation()]
        while peek == "|" {
            index += 1
            branches.append(try concatenation())
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func concatenation() throws(PatternError) -> PatternNode {
        var nodes: [PatternNode] = []
        while let next = peek, next != "|", next != ")" {
            guard let atom = try atom() else { continue }
            nodes.append(try quantified(atom))
        }
        switch nodes.count {
        case 0: return .empty
        case 1: return nodes[0]
        default: return .concat(nodes)
        }
    }

    /// One atom, or nil for a flag group such as `(?i)` that only changes what follows.
    private mutating func atom() throws(PatternError) -> PatternNode? {
        let scalar = scalars[index]
        index += 1
        switch scalar {
        case "(": return try group()
        case "[": return .set(try characterClass())
        case ".": return .set(ScalarSet(classes: [.init(.newline, negated: true)]))
        case "^": return .assertion(.start)
        case "$": return .assertion(.end)
        case "\\": return try escape()
        case "*", "+", "?": throw error("\(scalar) has nothing to repeat")
        default: return literal(scalar)
        }
    }

    private func literal(_ scalar: Unicode.Scalar) -> PatternNode {
        .set(ScalarSet(ranges: [scalar.value...scalar.value], caseless: caseless))
    }

    private mutating func group() throws(PatternError) -> PatternNode? {
        depth += 1
        defer { depth -= 1 }
        if depth > Self.maxDepth { throw error("groups nested more than \(Self.maxDepth) deep") }
        let saved = caseless
        if peek == "?" {
            index += 1
            guard let kind = peek else { throw error("unterminated group") }
            switch kind {
            case ":": index += 1
            case "<" where ["=", "!"].contains(peek(1)), "=", "!":
                throw error("lookaround ((?=, (?!, (?<=, (?<!) is not supported: it cannot be matched in linear time")
            case "<", "P", "'":
                try skipGroupName()
            case "i", "-":
                if try flags() { return nil }   // (?i) applies to the rest of the enclosing group
            default:
                throw error("unknown group syntax (?\(kind)")
            }
        }
        let body = try alternation()
        guard peek == ")" else { throw error("missing )") }
        index += 1
        caseless = saved
        return body
    }

    private mutating func skipGroupName() throws(PatternError) {
        if peek == "P" { index += 1 }
        let close: Unicode.Scalar = peek == "'" ? "'" : ">"
        index += 1
        while let next = peek, next != close {
            guard next.properties.isAlphabetic || ("0"..."9").contains(next) || next == "_" else {
                throw error("a group name may hold letters, digits and _ only")
            }
            index += 1
        }
        guard peek == close else { throw error("unterminated group name") }
        index += 1
    }

    /// `i`, `-i`, then `)` (returns true: flags for the rest of the group) or `:` (a group follows).
    private mutating func flags() throws(PatternError) -> Bool {
        var on = true
        while let next = peek, next != ")", next != ":" {
            switch next {
            case "-": on = false
            case "i": caseless = on
            default: throw error("unknown flag \(next): only i is supported")
            }
            index += 1
        }
        guard let end = peek else { throw error("unterminated group") }
        index += 1
        return end == ")"
    }

    private mutating func quantified(_ atom: PatternNode) throws(PatternError) -> PatternNode {
        var node = atom
        var repeated = false
        while let next = peek {
            let bounds: (Int, Int?)
            switch next {
            case "*": bounds = (0, nil); index += 1
            case "+": bounds = (1, nil); index += 1
            case "?": bounds = (0, 1); index += 1
            case "{":
                guard let counted = try counted() else { return node }
                bounds = counted
            default: return node
            }
            if case .assertion = atom { throw error("an anchor cannot be repeated") }
            if repeated { throw error("\(next) follows another quantifier: group the first one") }
            if peek == "+" { throw error("possessive quantifiers (\(next)+) are not supported") }
            if peek == "?" { index += 1 }   // lazy: the same strings match as a whole
            node = .repetition(node, min: bounds.0, max: bounds.1)
            repeated = true
        }
        return node
    }

    /// `{n}`, `{n,}`, `{n,m}`; nil (and nothing consumed) when the brace is a literal one.
    private mutating func counted() throws(PatternError) -> (Int, Int?)? {
        var cursor = index + 1
        func number() -> Int? {
            var value: Int?
            while cursor < scalars.count, let digit = Int(String(scalars[cursor])), ("0"..."9").contains(scalars[cursor]) {
                value = min((value ?? 0) * 10 + digit, 1_000_000)
                cursor += 1
            }
            return value
        }
        guard let low = number() else { return nil }
        var high: Int? = low
        if cursor < scalars.count, scalars[cursor] == "," {
            cursor += 1
            high = number()
        }
        guard cursor < scalars.count, scalars[cursor] == "}" else { return nil }
        index = cursor + 1
        if let high, high < low { throw error("{\(low),\(high)}: the maximum is below the minimum") }
        if max(low, high ?? 0) > Self.maxRepeat { throw error("a repeat count above \(Self.maxRepeat)") }
        return (low, high)
    }

    private mutating func escape() throws(PatternError) -> PatternNode {
        guard let scalar = peek else { throw error("\\ at the end of the pattern") }
        index += 1
        switch scalar {
        case "b": return .assertion(.wordBoundary)
        case "B": return .assertion(.notWordBoundary)
        case "A": return .assertion(.start)
        case "z", "Z": return .assertion(.end)
        case "1"..."9":
            throw error("backreferences (\\\(scalar)) are not supported: they cannot be matched in linear time")
        default:
            if let item = ScalarSet.ClassItem(escape: scalar) { return .set(ScalarSet(classes: [item])) }
            return literal(try escapedScalar(scalar))
        }
    }

    /// The scalar an escape stands for: `\n`, `\x41`, `\u{1F600}`, `\.`, …
    private mutating func escapedScalar(_ scalar: Unicode.Scalar) throws(PatternError) -> Unicode.Scalar {
        switch scalar {
        case "t": return "\t"
        case "n": return "\n"
        case "r": return "\r"
        case "f": return "\u{0C}"
        case "v": return "\u{0B}"
        case "e": return "\u{1B}"
        case "0": return "\0"
        case "x", "u": return try hexScalar(digits: scalar == "x" ? 2 : 4)
        default:
            if scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                throw error("unknown escape \\\(scalar)")
            }
            return scalar
        }
    }

    private mutating func hexScalar(digits: Int) throws(PatternError) -> Unicode.Scalar {
        let braced = peek == "{"
        if braced { index += 1 }
        var text = ""
        while let next = peek, next.properties.isASCIIHexDigit, braced ? text.count < 8 : text.count < digits {
            text.unicodeScalars.append(next)
            index += 1
        }
        if braced {
            guard peek == "}" else { throw error("unterminated \\x{…} or \\u{…}") }
            index += 1
        }
        guard !text.isEmpty, braced || text.count == digits, let value = UInt32(text, radix: 16),
              let result = Unicode.Scalar(value) else { throw error("a bad hexadecimal escape") }
        return result
    }

    private mutating func characterClass() throws(PatternError) -> ScalarSet {
        var set = ScalarSet(caseless: caseless)
        if peek == "^" { set.negated = true; index += 1 }
        var first = true
        while let scalar = peek, scalar != "]" || first {
            first = false
            index += 1
            if scalar == "[" {
                guard peek == ":" else { throw error("a [ inside a character class: escape it as \\[") }
                set.classes.append(try posixClass())
                continue
            }
            if scalar == "&", peek == "&" { throw error("class operations (&&) are not supported") }
            let low: Unicode.Scalar
            if scalar == "\\" {
                guard let next = peek else { break }
                index += 1
                if let item = ScalarSet.ClassItem(escape: next) { set.classes.append(item); continue }
                low = next == "b" ? "\u{08}" : try escapedScalar(next)
            } else {
                low = scalar
            }
            if peek == "-", let after = peek(1), after != "]" {
                index += 1
                let high = try classRangeEnd()
                guard low.value <= high.value else { throw error("a range out of order: \(low)-\(high)") }
                set.ranges.append(low.value...high.value)
            } else {
                set.ranges.append(low.value...low.value)
            }
        }
        guard peek == "]" else { throw error("missing ] to close a character class") }
        index += 1
        return set
    }

    private mutating func classRangeEnd() throws(PatternError) -> Unicode.Scalar {
        let scalar = scalars[index]
        index += 1
        guard scalar == "\\" else { return scalar }
        guard let next = peek else { throw error("\\ at the end of the pattern") }
        index += 1
        if ScalarSet.ClassItem(escape: next) != nil { throw error("a class such as \\d cannot end a range") }
        return try escapedScalar(next)
    }

    private mutating func posixClass() throws(PatternError) -> ScalarSet.ClassItem {
        var name = ""
        index += 1
        while let next = peek, next != ":" { name.unicodeScalars.append(next); index += 1 }
        guard peek == ":", peek(1) == "]" else { throw error("unterminated [:class:]") }
        index += 2
        guard let kind = ScalarSet.ClassItem.Kind(rawValue: name) else { throw error("unknown class [:\(name):]") }
        return ScalarSet.ClassItem(kind)
    }

    private var peek: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    private func peek(_ ahead: Int) -> Unicode.Scalar? {
        index + ahead < scalars.count ? scalars[index + ahead] : nil
    }

    private func error(_ message: String) -> PatternError {
        PatternError(message: message, offset: min(index, scalars.count))
    }
}
