import BatonCore

/// A transaction-scoped PostgreSQL advisory lock named by a namespace and a name (an action's
/// pause, a rate-limit bucket): its 64-bit key is computed here (`FNV1a` over the UTF-8 of
/// `namespace NUL name`), so that a transaction that takes several sorts them by the key it
/// locks. Two names whose keys collide are one lock, taken once, and never in crossing order.
struct FleetAdvisoryLock: Hashable, Comparable, Sendable {
    let key: Int64

    init(_ namespace: String, _ name: String) {
        var hash = FNV1a()
        hash.add(namespace.utf8)
        hash.add(CollectionOfOne(0))
        hash.add(name.utf8)
        key = Int64(bitPattern: hash.value)
    }

    static func < (a: Self, b: Self) -> Bool { a.key < b.key }

    /// The statement that takes it, held to the transaction's end.
    var statement: FleetJournal.Statement { ("SELECT pg_advisory_xact_lock($1::bigint)", [String(key)]) }

    /// The statements that take each of `locks` once, in key order.
    static func statements(_ locks: some Sequence<FleetAdvisoryLock>) -> [FleetJournal.Statement] {
        Set(locks).sorted().map(\.statement)
    }
}
