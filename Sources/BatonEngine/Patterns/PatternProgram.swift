/// A pattern compiled to a small non-deterministic automaton, run by simulating every state at
/// once (Thompson's construction, as in RE2 and Go's regexp): the time to match is at most the
/// value's length times the program's size, whatever the pattern, so no input can blow it up.
struct PatternProgram: Sendable {
    enum Instruction: Sendable, Equatable {
        /// Consume one scalar of the set at this index.
        case consume(Int)
        /// Continue at both targets.
        case split(Int, Int)
        case jump(Int)
        case assert(PatternAssertion)
        case match
    }

    /// Bounds the work per scalar of input (and so the time of the longest match).
    static let maxInstructions = 2_000

    private(set) var instructions: [Instruction] = []
    private(set) var sets: [ScalarSet] = []
    /// Each set's ASCII members as a 128-bit map, so that most scalars are tested with one shift.
    private var ascii: [(low: UInt64, high: UInt64)] = []

    init(_ node: PatternNode) throws(PatternError) {
        try emit(node)
        instructions.append(.match)
        ascii = sets.map { set in
            var bits: (low: UInt64, high: UInt64) = (0, 0)
            for value in 0..<128 where set.contains(Unicode.Scalar(UInt8(value))) {
                if value < 64 { bits.low |= 1 << UInt64(value) } else { bits.high |= 1 << UInt64(value - 64) }
            }
            return bits
        }
    }

    // MARK: Compiling

    private mutating func emit(_ node: PatternNode) throws(PatternError) {
        guard instructions.count < Self.maxInstructions else {
            throw PatternError(message: "the pattern is too large (over \(Self.maxInstructions) steps once repeats are counted)",
                               offset: nil)
        }
        switch node {
        case .empty:
            break
        case let .set(set):
            if let index = sets.firstIndex(of: set) {
                instructions.append(.consume(index))
            } else {
                sets.append(set)
                instructions.append(.consume(sets.count - 1))
            }
        case let .assertion(assertion):
            instructions.append(.assert(assertion))
        case let .concat(nodes):
            for node in nodes { try emit(node) }
        case let .alternation(branches):
            try alternation(branches[...])
        case let .repetition(body, min, max):
            for _ in 0..<min { try emit(body) }
            if let max {
                try optionals(body, count: max - min)
            } else {
                try star(body)
            }
        }
    }

    private mutating func alternation(_ branches: ArraySlice<PatternNode>) throws(PatternError) {
        guard branches.count > 1, let first = branches.first else {
            if let only = branches.first { try emit(only) }
            return
        }
        let split = placeholder()
        try emit(first)
        let jump = placeholder()
        instructions[split] = .split(split + 1, instructions.count)
        try alternation(branches.dropFirst())
        instructions[jump] = .jump(instructions.count)
    }

    private mutating func star(_ body: PatternNode) throws(PatternError) {
        let split = placeholder()
        try emit(body)
        instructions.append(.jump(split))
        instructions[split] = .split(split + 1, instructions.count)
    }

    /// `count` nested optional copies: `(body(body(body)?)?)?`.
    private mutating func optionals(_ body: PatternNode, count: Int) throws(PatternError) {
        var splits: [Int] = []
        for _ in 0..<count {
            splits.append(placeholder())
            try emit(body)
        }
        for split in splits { instructions[split] = .split(split + 1, instructions.count) }
    }

    private mutating func placeholder() -> Int {
        instructions.append(.match)
        return instructions.count - 1
    }

    // MARK: Matching

    /// Whether the program matches the whole of `scalars`, and how many states it visited: at
    /// most the program's size for each scalar and once more, which the tests hold it to.
    func run(_ scalars: [Unicode.Scalar]) -> (matched: Bool, visited: Int) {
        var visited = 0
        var current = StateSet(capacity: instructions.count)
        var next = StateSet(capacity: instructions.count)
        var stack: [Int] = []
        add(0, to: &current, at: 0, in: scalars, stack: &stack)
        visited += current.count
        for position in scalars.indices {
            let scalar = scalars[position]
            next.removeAll()
            for pc in current.members {
                if case let .consume(set) = instructions[pc], accepts(set, scalar) {
                    add(pc + 1, to: &next, at: position + 1, in: scalars, stack: &stack)
                }
            }
            visited += next.count
            swap(&current, &next)
            if current.isEmpty { return (false, visited) }
        }
        return (current.members.contains { instructions[$0] == .match }, visited)
    }

    private func accepts(_ set: Int, _ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 64 { return ascii[set].low & (1 << UInt64(value)) != 0 }
        if value < 128 { return ascii[set].high & (1 << UInt64(value - 64)) != 0 }
        return sets[set].contains(scalar)
    }

    /// Adds `pc` and every state reachable from it without consuming input.
    private func add(_ pc: Int, to states: inout StateSet, at position: Int, in scalars: [Unicode.Scalar],
                     stack: inout [Int]) {
        stack.append(pc)
        while let pc = stack.popLast() {
            guard states.insert(pc) else { continue }
            switch instructions[pc] {
            case let .jump(target): stack.append(target)
            case let .split(first, second): stack.append(second); stack.append(first)
            case let .assert(assertion):
                if Self.holds(assertion, at: position, in: scalars) { stack.append(pc + 1) }
            case .consume, .match: break
            }
        }
    }

    private static func holds(_ assertion: PatternAssertion, at position: Int, in scalars: [Unicode.Scalar]) -> Bool {
        switch assertion {
        case .start: return position == 0
        case .end: return position == scalars.count
        case .wordBoundary, .notWordBoundary:
            let before = position > 0 && ScalarSet.ClassItem.Kind.word.contains(scalars[position - 1])
            let after = position < scalars.count && ScalarSet.ClassItem.Kind.word.contains(scalars[position])
            return (before != after) == (assertion == .wordBoundary)
        }
    }
}

/// A set of program counters with O(1) insert, membership and clear (a sparse set).
struct StateSet {
    private var dense: [Int]
    private var sparse: [Int]
    private(set) var count = 0

    init(capacity: Int) {
        dense = Array(repeating: 0, count: capacity)
        sparse = Array(repeating: 0, count: capacity)
    }

    /// Inserts; false when it was already there.
    mutating func insert(_ value: Int) -> Bool {
        let slot = sparse[value]
        if slot < count, dense[slot] == value { return false }
        sparse[value] = count
        dense[count] = value
        count += 1
        return true
    }

    mutating func removeAll() { count = 0 }

    var isEmpty: Bool { count == 0 }

    var members: ArraySlice<Int> { dense[0..<count] }
}
