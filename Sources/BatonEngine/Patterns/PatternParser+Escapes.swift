extension PatternParser {
    // Escapes (`\d`, `\x41`, `\b`) and character classes (`[a-z\d]`, `[[:alpha:]]`).

    mutating func escape() throws(PatternError) -> PatternNode {
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
    mutating func escapedScalar(_ scalar: Unicode.Scalar) throws(PatternError) -> Unicode.Scalar {
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

    mutating func characterClass() throws(PatternError) -> ScalarSet {
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
}
