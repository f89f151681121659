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
    let scalars: [Unicode.Scalar]
    var index = 0
    var caseless = false
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

    func literal(_ scalar: Unicode.Scalar) -> PatternNode {
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

    var peek: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

    func peek(_ ahead: Int) -> Unicode.Scalar? {
        index + ahead < scalars.count ? scalars[index + ahead] : nil
    }

    func error(_ message: String) -> PatternError {
        PatternError(message: message, offset: min(index, scalars.count))
    }
}
