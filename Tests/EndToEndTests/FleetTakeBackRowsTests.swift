import BatonCore
@testable import BatonFleet
import Foundation
import Testing

/// The rows a fleet host's restart reads and writes (`FleetTakeBack`, `FleetLease.register`;
/// issue 41 part 3), against a real PostgreSQL.
@Suite("End to end: a fleet host's take-back, as rows", .offPool)
struct FleetTakeBackRowsTests {
    static let old = FleetHost(name: "web-1", incarnation: "web-1/1/aa", lease: .seconds(4))
    static let me = FleetHost(name: "web-1", incarnation: "web-1/2/bb", lease: .seconds(4))

    static func database() throws -> PGConnection {
        let db = try PGConnection(try Postgres.server().database())
        _ = try FleetSchema.migrate(db)
        return db
    }

    @Test("a join tried again registers again: the second register is no duplicate key, and the row keeps this start's tag")
    func registerTwice() throws {
        let db = try Self.database()
        try FleetLease.register(Self.me, instance: "fleet:web-1:abc", on: db)
        try FleetLease.register(Self.me, instance: "fleet:web-1:abc", on: db)
        #expect(try db.query("SELECT instance FROM hosts WHERE incarnation = $1", [Self.me.incarnation]).rows == [["fleet:web-1:abc"]])
    }

    @Test("the take-back's lease holds to the guard's deadline (three quarters of a 4 s lease), not to the full lease")
    func leaseHoldsToTheGuardsDeadline() throws {
        let db = try Self.database()
        try FleetLease.register(Self.old, instance: "fleet:web-1:abc", on: db)
        try db.query("UPDATE hosts SET renewed_at = now() - interval '2 seconds' WHERE incarnation = $1", [Self.old.incarnation])
        #expect(try db.transaction { try FleetTakeBack.leaseHolds(Self.old.incarnation, on: db) })
        // Past 3 s the old start's guard may have killed its runs: none may be moved.
        try db.query("UPDATE hosts SET renewed_at = now() - interval '3200 milliseconds' WHERE incarnation = $1", [Self.old.incarnation])
        #expect(try !db.transaction { try FleetTakeBack.leaseHolds(Self.old.incarnation, on: db) })
    }

    @Test("each previous start's recorded tag, and this start's for a start of an older batond that recorded none")
    func recordedTags() throws {
        let db = try Self.database()
        try FleetLease.register(Self.old, instance: "fleet:web-1:old", on: db)
        try db.query("INSERT INTO hosts (incarnation, name, pid, lease_ms) VALUES ('web-1/0/zz', 'web-1', 1, 4000)")
        let tags = try FleetTakeBack.instances(of: [Self.old.incarnation, "web-1/0/zz"], assuming: "fleet:web-1:new", on: db)
        #expect(tags == [Self.old.incarnation: "fleet:web-1:old", "web-1/0/zz": "fleet:web-1:new"])
    }
}
