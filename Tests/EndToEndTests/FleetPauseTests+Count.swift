import BatonCore
@testable import BatonFleet
import Testing

extension FleetPauseTests {
    @Test("count's write of failures in a row is a compare-and-set: from the count read it writes; from a stale read (another writer counted, or made the row, since) it writes nothing, which count throws for")
    func keepComparesAndSets() throws {
        let db = try PGConnection(try Postgres.server().database())
        _ = try FleetSchema.migrate(db)
        let count = { try db.query("SELECT failures FROM pause_streaks WHERE action = 'a'").first?[0] }
        #expect(try db.query(FleetPauses.keep(1, of: "a", read: nil)).affected == 1, "none read, none there: made")
        #expect(try db.query(FleetPauses.keep(5, of: "a", read: nil)).affected == 0, "none read, one made since: nothing written")
        #expect(try db.query(FleetPauses.keep(2, of: "a", read: "1")).affected == 1)
        #expect(try db.query(FleetPauses.keep(3, of: "a", read: "1")).affected == 0, "a stale read: nothing written")
        #expect(try count() == "2")
    }
}
