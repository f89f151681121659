import BatonCore
/// One option a command accepts.
struct OptionSpec: Sendable {
    var long: String
    var short: Character?
    /// The value's placeholder (`N`, `PHASE`); nil for a flag.
    var value: String?
    var help: String
}

/// A command: its name, what it does, its options, and how it runs.
struct CommandSpec: Sendable {
    var name: String
    var abstract: String
    /// The positional arguments, as shown in the usage line.
    var arguments: String
    var options: [OptionSpec]
    var run: @Sendable (ParsedArguments, Context) throws -> Int32

    /// Options every command takes, anywhere on the line (`baton history --database F` as well as
    /// `baton --database F history`); the last one given wins.
    static let global: [OptionSpec] = [
        OptionSpec(long: "socket", value: "PATH", help: "batond's socket (default: $BATON_SOCKET, yours, then the system's)"),
        OptionSpec(long: "database", value: "PATH", help: "read this history file directly, without batond"),
    ]

    /// Text with each line longer than `width` broken at spaces.
    static func wrap(_ text: String, width: Int) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            var lines: [String] = []
            var current = ""
            for word in line.split(separator: " ") {
                if !current.isEmpty && current.count + 1 + word.count > width {
                    lines.append(current)
                    current = ""
                }
                current += (current.isEmpty ? "" : " ") + word
            }
            lines.append(current)
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// The abstract's first sentence, on one line, for command lists.
    var summary: String {
        let text = abstract.replacingEvery("\n", with: " ")
        guard let end = text.firstRange(of: ". ") else { return text.hasSuffix(".") ? String(text.dropLast()) : text }
        return String(text[..<end.lowerBound])
    }

    /// The exact help text of the command.
    var help: String {
        var text = "Usage: baton \(name)\(arguments.isEmpty ? "" : " " + arguments)\(options.isEmpty ? "" : " [options]")\n\n\(Self.wrap(abstract, width: 100))\n"
        if !options.isEmpty { text += "\nOptions:\n" + Self.table(options) }
        text += "\nGlobal options:\n" + Self.table(Self.global)
        return text
    }

    /// Options as aligned rows: `-n, --limit N  what it does`.
    static func table(_ options: [OptionSpec]) -> String {
        let rows = options.map { option -> (String, String) in
            var left = option.short.map { "-\($0), " } ?? "    "
            left += "--\(option.long)"
            if let value = option.value { left += " \(value)" }
            return (left, option.help)
        }
        let width = rows.map(\.0.count).max() ?? 0
        return rows.map { left, right in "  " + left + String(repeating: " ", count: width - left.count + 2) + right + "\n" }.joined()
    }

    /// Splits arguments into option values and positionals; throws naming the bad argument.
    func parse(_ arguments: [String]) throws(UsageError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--" {
                parsed.positionals += rest
                break
            }
            guard argument.hasPrefix("-"), argument.count > 1 else {
                parsed.positionals.append(argument)
                continue
            }
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            } else if !argument.hasPrefix("--"), argument.count > 2,
                      options.contains(where: { $0.value != nil && $0.short.map { "-\($0)" } == String(argument.prefix(2)) }) {
                // A short option with its value attached: -n1, -penv=prod.
                name = String(argument.prefix(2))
                inline = String(argument.dropFirst(2))
            }
            let option = (options + Self.global).first { name == "--" + $0.long || (name.count == 2 && $0.short.map { "-\($0)" } == name) }
            guard let option else {
                throw UsageError.unknown("option", name, prefix: "baton \(self.name): ", among: (options + Self.global).map { "--" + $0.long },
                                         help: "baton \(self.name) --help")
            }
            if option.value != nil {
                guard let value = inline ?? rest.popFirst() else { throw UsageError("baton \(self.name): \(name) needs a value") }
                parsed.values[option.long, default: []].append(value)
            } else {
                guard inline == nil else { throw UsageError("baton \(self.name): \(name) takes no value") }
                parsed.flags.insert(option.long)
            }
        }
        return parsed
    }
}

/// A command line after parsing.
struct ParsedArguments {
    var values: [String: [String]] = [:]
    var flags: Set<String> = []
    var positionals: [String] = []

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The values of a repeatable NAME=VALUE option (`--param env=prod`), by name. A name given
    /// twice is refused: which of its values was meant is the caller's to say.
    func pairs(_ option: String, command: String) throws(UsageError) -> [String: String] {
        var pairs: [String: String] = [:]
        for pair in all(option) {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw UsageError("baton \(command): --\(option) takes NAME=VALUE, got \(pair)")
            }
            let name = String(pair[..<equals]), value = String(pair[pair.index(after: equals)...])
            if let first = pairs[name] {
                throw UsageError("baton \(command): --\(option) \(name) is given twice (\(name)=\(first), then \(name)=\(value)): give each \(option) once")
            }
            pairs[name] = value
        }
        return pairs
    }
}

/// A command line that cannot be understood; exit code 2.
struct UsageError: Error, Equatable, CustomStringConvertible {
    var description: String
    /// The `Try:` line's words; nil: `baton --help`.
    var hint: String?
    init(_ description: String, hint: String? = nil) {
        self.description = description
        self.hint = hint
    }

    /// An unknown name (`kind` "command", "option", …) among `known`, suggesting the closest one
    /// (`Try: did you mean "status"? (baton --help lists them)`); `help` says where the list is.
    static func unknown(_ kind: String, _ name: String, prefix: String = "", among known: [String], help: String = "baton --help") -> UsageError {
        let guess = Suggestion.didYouMean(name, among: known)
        return UsageError("\(prefix)unknown \(kind) \(name)", hint: guess.map { "\($0) (\(help) lists them)" } ?? help)
    }
}
