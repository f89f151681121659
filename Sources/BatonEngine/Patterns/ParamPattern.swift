/// A param's pattern, compiled once when the config is read, that a value must match as a whole.
///
/// The syntax is the familiar one (`^(staging|prod)$`, `[a-z0-9-]{1,40}`, `\d+`, `(?i)yes|no`),
/// matched in time linear in the value's length whatever the pattern: a trigger cannot make
/// batond spin (`^(a+)+$` against `aaaa…b` takes microseconds). Backreferences, lookaround and
/// possessive quantifiers, which need backtracking, are refused when the config is read.
public struct ParamPattern: Sendable, Equatable, CustomStringConvertible {
    /// The pattern as written in the config.
    public let source: String
    private let program: PatternProgram
    /// Whether the pattern repeats a repetition (`(a+)+`): harmless here, slow elsewhere.
    public let hasNestedQuantifier: Bool

    /// The longest pattern accepted, in bytes.
    public static let maxLength = 1_024

    /// Compiles `source`; throws a `PatternError` saying what is wrong and where.
    public init(_ source: String) throws(PatternError) {
        guard source.utf8.count <= Self.maxLength else {
            throw PatternError(message: "longer than \(Self.maxLength) bytes", offset: nil)
        }
        var parser = PatternParser(source)
        let tree = try parser.parse()
        self.source = source
        self.program = try PatternProgram(tree)
        self.hasNestedQuantifier = tree.hasNestedQuantifier
    }

    /// Whether the whole of `value` matches, compared by Unicode scalar.
    public func matches(_ value: String) -> Bool {
        program.run(Array(value.unicodeScalars)).matched
    }

    /// The most automaton states matching a value of `length` scalars can visit.
    public func worstCaseSteps(forLength length: Int) -> Int {
        (length + 2) * program.instructions.count
    }

    /// The automaton states visited to match `value`: the work done, for the tests to bound.
    func statesVisited(_ value: String) -> Int {
        program.run(Array(value.unicodeScalars)).visited
    }

    /// The size of the compiled program.
    var programSize: Int { program.instructions.count }

    public var description: String { source }

    public static func == (lhs: ParamPattern, rhs: ParamPattern) -> Bool { lhs.source == rhs.source }
}

/// Why a pattern was refused, and where (a scalar offset into it).
public struct PatternError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var offset: Int?

    public var description: String {
        offset.map { "\(message) (at offset \($0))" } ?? message
    }
}
