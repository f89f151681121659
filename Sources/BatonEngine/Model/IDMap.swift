/// A dictionary keyed by an integer id that batond hands out itself (a run's id, a caller's token),
/// whose keys hash with one multiply instead of SipHash: the loop looks its runs up in several such
/// tables for every event, and `Int64`'s SipHash was 109 `Hasher._hash` calls a run (issue 39).
///
/// The cheap hash stands up to no chosen key, seed or not: ids that differ only in their high bits
/// fall in one bucket whatever the table's seed (`IDMapTests.highBits`), and a table fed many
/// such ids is a list. So its keys must never come from outside batond: batond numbers its runs
/// and tokens in order, and a request that names a run only looks it up (a look-up of any key
/// reads one bucket of batond's own). Keys that are not ids given out by batond belong in a
/// `Dictionary`, whose seeded SipHash stands up to chosen keys. The API is the part of
/// `Dictionary`'s the loop uses, with the same meaning. Public, not `package`: with `package`
/// access the loop's calls were not specialized (generic metadata looked up at run time, +14 %
/// of the loop's instructions a run: docs/benchmarks.md, session 25).
public struct IDMap<ID: FixedWidthInteger & Sendable, Value> {
    @usableFromInline var table: [HashedID: Value]

    /// An id whose hash is `_rawHashValue(seed:)` below, which `Dictionary` honours in place of
    /// `hash(into:)` (a `Hashable` requirement: checked by `IDMapTests.cheapHash`).
    public struct HashedID: Hashable, Sendable {
        public let id: ID

        @inlinable init(_ id: ID) { self.id = id }

        @inlinable public func hash(into hasher: inout Hasher) { hasher.combine(id) }

        /// The id xor the table's seed (each table has its own, so that copying one table into
        /// another does not pile keys up; no defence against chosen keys), times an odd constant, its high half folded onto its
        /// low one: the buckets are the low bits, and without the fold ids a stride of 2^k apart
        /// (a fleet's hosts share one sequence) would use one bucket in 2^k. Consecutive and
        /// strided ids spread as with a random hash (`IDMapTests.spread`).
        @inlinable public func _rawHashValue(seed: Int) -> Int {
            let mixed = (UInt64(truncatingIfNeeded: id) ^ UInt64(UInt(bitPattern: seed))) &* 0x9E37_79B9_7F4A_7C15
            return Int(truncatingIfNeeded: mixed ^ (mixed >> 32))
        }
    }

    /// An empty map.
    @inlinable public init() { table = [:] }

    /// The value for `id`, or nil; setting nil removes it.
    @inlinable public subscript(id: ID) -> Value? {
        get { table[HashedID(id)] }
        set { table[HashedID(id)] = newValue }
        _modify { yield &table[HashedID(id)] }
    }

    /// The value for `id`, or `fallback` (stored on a change).
    @inlinable public subscript(id: ID, default fallback: @autoclosure () -> Value) -> Value {
        get { table[HashedID(id), default: fallback()] }
        _modify { yield &table[HashedID(id), default: fallback()] }
    }

    /// Removes and returns the value for `id`.
    @inlinable @discardableResult public mutating func removeValue(forKey id: ID) -> Value? {
        table.removeValue(forKey: HashedID(id))
    }

    /// Where `id`'s value is in `values`, for changing it in place without a second look-up.
    @inlinable public func index(forKey id: ID) -> Dictionary<HashedID, Value>.Index? { table.index(forKey: HashedID(id)) }

    /// The values, in no particular order; writable by `index(forKey:)`.
    @inlinable public var values: Dictionary<HashedID, Value>.Values {
        get { table.values }
        _modify { yield &table.values }
    }

    /// The ids, in no particular order.
    @inlinable public var keys: LazyMapSequence<Dictionary<HashedID, Value>.Keys, ID> { table.keys.lazy.map(\.id) }

    /// Removes every value (`keepingCapacity`: the table keeps its room).
    @inlinable public mutating func removeAll(keepingCapacity: Bool = false) { table.removeAll(keepingCapacity: keepingCapacity) }

    @inlinable public var count: Int { table.count }
    @inlinable public var isEmpty: Bool { table.isEmpty }

    /// The pairs for which `isIncluded` holds, as a map.
    @inlinable public func filter(_ isIncluded: ((key: ID, value: Value)) throws -> Bool) rethrows -> IDMap {
        var kept = IDMap()
        kept.table = try table.filter { try isIncluded((key: $0.key.id, value: $0.value)) }
        return kept
    }
}

extension IDMap: Sequence {
    public struct Iterator: IteratorProtocol {
        @usableFromInline var base: Dictionary<HashedID, Value>.Iterator
        @inlinable init(_ base: Dictionary<HashedID, Value>.Iterator) { self.base = base }
        @inlinable public mutating func next() -> (key: ID, value: Value)? {
            base.next().map { (key: $0.key.id, value: $0.value) }
        }
    }

    @inlinable public func makeIterator() -> Iterator { Iterator(table.makeIterator()) }
    @inlinable public var underestimatedCount: Int { table.count }
}

extension IDMap: ExpressibleByDictionaryLiteral {
    @inlinable public init(dictionaryLiteral elements: (ID, Value)...) {
        table = Dictionary(uniqueKeysWithValues: elements.map { (HashedID($0.0), $0.1) })
    }
}

extension IDMap: Sendable where Value: Sendable {}
extension IDMap: Equatable where Value: Equatable {}
