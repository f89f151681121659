import BatonCore
import FoundationEssentials

/// Readers of one field each: the value if it has the right form, or nil with a problem naming
/// the field and what it should have been.
extension ConfigReader {
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.unicodeScalars.count <= Action.maxNameLength else { return false }
        let isAlnum: (Unicode.Scalar) -> Bool = { ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) }
        return isAlnum(first) && name.unicodeScalars.allSatisfy { isAlnum($0) || $0 == "-" || $0 == "_" || $0 == "." }
    }

    mutating func fail(_ path: String, _ message: String) {
        problems.append(.init(path: path, message: message))
    }

    /// Notes something legal but likely unintended; the config is still accepted.
    mutating func warn(_ path: String, _ message: String) {
        warnings.append(.init(path: path, message: message))
    }

    mutating func object(_ value: JSONValue, at: String, allowed: Set<String>) -> [String: JSONValue]? {
        guard case let .object(fields) = value else {
            fail(at, "expected an object, got \(value.kind)")
            return nil
        }
        for key in fields.keys.sorted() where !allowed.contains(key) {
            let guess = Suggestion.didYouMean(key, among: allowed.sorted()).map { ": \($0)" } ?? ""
            fail(at.isEmpty ? key : "\(at).\(key)", "unknown field\(guess) (known: \(allowed.sorted().joined(separator: ", ")))")
        }
        return fields
    }

    mutating func string(_ value: JSONValue, at: String) -> String? {
        if case let .unreadableString(string) = value {
            fail(at, string.message)
            return nil
        }
        guard case let .string(text) = value else {
            fail(at, "expected a string, got \(value.kind)")
            return nil
        }
        return text
    }

    mutating func path(_ value: JSONValue, at: String) -> String? {
        guard let text = string(value, at: at) else { return nil }
        guard text.hasPrefix("/") else {
            fail(at, "expected an absolute path, got \(Action.quoted(text))")
            return nil
        }
        return text
    }

    mutating func integer(_ value: JSONValue, at: String, min: Int, max: Int = 1_000_000) -> Int? {
        guard case let .number(number) = value, number.rounded() == number, number >= Double(min), number <= Double(max) else {
            fail(at, "expected a whole number from \(min) to \(max), got \(Self.show(value))")
            return nil
        }
        return Int(number)
    }

    mutating func duration(_ value: JSONValue, at: String) -> Duration? {
        if case let .number(seconds) = value, seconds >= 0, seconds < 3_153_600_000 {
            return .microseconds(Int64(seconds * 1_000_000))
        }
        if case let .string(text) = value, DurationText.isTooLarge(text) {
            fail(at, "\(Action.quoted(text)) is too long: at most \(DurationText.format(DurationText.maximum))")
            return nil
        }
        guard case let .string(text) = value, let duration = DurationText.parse(text) else {
            fail(at, "expected a duration such as \"30s\", \"5m\" or \"1h30m\", got \(Self.show(value))")
            return nil
        }
        return duration
    }

    /// A duration that must be more than zero (a timeout of 0 would fail every run at once).
    mutating func positiveDuration(_ value: JSONValue, at: String) -> Duration? {
        guard let duration = duration(value, at: at) else { return nil }
        guard duration > .zero else {
            fail(at, "must be more than 0 (leave it out for no limit)")
            return nil
        }
        return duration
    }

    mutating func choice(_ value: JSONValue, at: String, _ options: [String]) -> String? {
        guard case let .string(text) = value, options.contains(text) else {
            let guess: String? = if case let .string(text) = value { Suggestion.didYouMean(text, among: options) } else { nil }
            fail(at, "expected one of \(options.joined(separator: ", ")), got \(Self.show(value))\(guess.map { ": \($0)" } ?? "")")
            return nil
        }
        return text
    }

    mutating func stringArray(_ value: JSONValue, at: String) -> [String]? {
        guard case let .array(items) = value else {
            fail(at, "expected an array of strings, got \(value.kind)")
            return nil
        }
        var strings: [String] = []
        for (index, item) in items.enumerated() {
            if let text = string(item, at: "\(at)[\(index)]") { strings.append(text) }
        }
        return strings
    }

    mutating func stringMap(_ value: JSONValue, at: String) -> [String: String]? {
        guard case let .object(fields) = value else {
            fail(at, "expected an object of strings, got \(value.kind)")
            return nil
        }
        var map: [String: String] = [:]
        for (key, item) in fields {
            if let text = string(item, at: "\(at).\(key)") { map[key] = text }
        }
        return map
    }

    static func show(_ value: JSONValue) -> String {
        switch value {
        case let .string(text): Action.quoted(text)
        // Whole numbers print without ".0" when they fit an Int64 (converting a larger one would trap;
        // found by the config fuzzer).
        case let .number(number) where !number.isFinite: "a number too large to represent"
        case let .number(number): number.rounded() == number && abs(number) < 9.2e18 ? String(Int64(number)) : String(number)
        case let .bool(flag): String(flag)
        default: value.kind
        }
    }
}

extension ConfigReader {
    /// `output: { keep: "16MiB" }`: how many bytes of a run's output are kept.
    mutating func outputKeep(_ value: JSONValue, at: String, allowed: Set<String> = ["keep"]) -> Int64? {
        guard let fields = object(value, at: at, allowed: allowed) else { return nil }
        guard let keep = fields["keep"] else { return nil }
        if case let .string(text) = keep, let bytes = ByteSize.parse(text) { return bytes }
        if case let .number(number) = keep, number >= 0, number.rounded() == number, number <= Double(ByteSize.maximum) {
            return Int64(number)
        }
        fail("\(at).keep", "expected a size such as \"16MiB\", \"512KiB\", \"1GiB\" or \"0\" (none), got \(Self.show(keep))")
        return nil
    }

    /// `output.journal` at the top: whether each line of output also goes to the journal where
    /// journald listens (the default), or not.
    mutating func outputJournal(_ value: JSONValue) -> Bool? {
        guard case let .object(fields) = value, let journal = fields["journal"] else { return nil }
        if case let .bool(flag) = journal { return flag }
        fail("output.journal", "expected true or false, got \(Self.show(journal))")
        return nil
    }
}
