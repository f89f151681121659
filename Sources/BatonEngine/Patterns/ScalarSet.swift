/// The scalars one step of a pattern accepts: ranges and named classes, maybe negated, maybe
/// ignoring case. A literal is a one-scalar range; `.` is "not a newline".
struct ScalarSet: Equatable, Sendable {
    /// A named class: `\d`, `\w`, `\s` and the POSIX bracket classes.
    struct ClassItem: Equatable, Sendable {
        enum Kind: String, Sendable {
            case digit, word, space, newline
            case alpha, alnum, upper, lower, punct, xdigit, cntrl, print, graph, blank
        }

        var kind: Kind
        var negated: Bool

        init(_ kind: Kind, negated: Bool = false) {
            self.kind = kind
            self.negated = negated
        }

        /// The class a backslash escape names (`\d`, `\W`, …), if it names one.
        init?(escape: Unicode.Scalar) {
            switch escape {
            case "d": self.init(.digit)
            case "D": self.init(.digit, negated: true)
            case "w": self.init(.word)
            case "W": self.init(.word, negated: true)
            case "s": self.init(.space)
            case "S": self.init(.space, negated: true)
            default: return nil
            }
        }

        func contains(_ scalar: Unicode.Scalar) -> Bool {
            kind.contains(scalar) != negated
        }
    }

    var ranges: [ClosedRange<UInt32>] = []
    var classes: [ClassItem] = []
    var negated = false
    var caseless = false

    func contains(_ scalar: Unicode.Scalar) -> Bool {
        var hit = containsExactly(scalar)
        if !hit, caseless { hit = Self.caseVariants(of: scalar).contains { containsExactly($0) } }
        return hit != negated
    }

    private func containsExactly(_ scalar: Unicode.Scalar) -> Bool {
        ranges.contains { $0.contains(scalar.value) } || classes.contains { $0.contains(scalar) }
    }

    /// The single-scalar lower, upper and title case forms of a scalar.
    static func caseVariants(of scalar: Unicode.Scalar) -> [Unicode.Scalar] {
        if scalar.isASCII {
            let value = scalar.value
            if (0x41...0x5A).contains(value) { return [Unicode.Scalar(value + 32)!] }
            if (0x61...0x7A).contains(value) { return [Unicode.Scalar(value - 32)!] }
            return []
        }
        let properties = scalar.properties
        return [properties.lowercaseMapping, properties.uppercaseMapping, properties.titlecaseMapping]
            .compactMap { $0.unicodeScalars.count == 1 ? $0.unicodeScalars.first : nil }
    }
}

extension ScalarSet.ClassItem.Kind {
    /// Whether a scalar is in the class. `\d`, `\w` and `\s` are ASCII, as in RE2 and Go (a pattern
    /// written for them means there what it means here): [0-9], [0-9A-Za-z_] and [\t\n\f\r ]. The
    /// bracket classes (`[[:alpha:]]`) follow Unicode.
    func contains(_ scalar: Unicode.Scalar) -> Bool {
        let properties = scalar.properties
        switch self {
        case .digit: return ("0"..."9").contains(scalar)
        case .word: return ("0"..."9").contains(scalar) || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
        case .space: return scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\u{0C}" || scalar == "\r"
        case .newline: return scalar == "\n"
        case .alpha: return properties.isAlphabetic
        case .alnum: return properties.isAlphabetic || properties.numericType == .decimal
        case .upper: return properties.isUppercase
        case .lower: return properties.isLowercase
        case .punct: return scalar.isASCII ? Self.asciiPunctuation.contains(scalar) : properties.generalCategory.isPunctuation
        case .xdigit: return properties.isASCIIHexDigit
        case .cntrl: return properties.generalCategory == .control
        case .print: return !Self.cntrl.contains(scalar) && properties.generalCategory != .unassigned
        case .graph: return Self.print.contains(scalar) && !properties.isWhitespace
        case .blank: return scalar == " " || scalar == "\t"
        }
    }

    private static let asciiPunctuation = Set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~".unicodeScalars)
}

extension Unicode.GeneralCategory {
    var isPunctuation: Bool {
        switch self {
        case .connectorPunctuation, .dashPunctuation, .openPunctuation, .closePunctuation,
             .initialPunctuation, .finalPunctuation, .otherPunctuation: true
        default: false
        }
    }
}
