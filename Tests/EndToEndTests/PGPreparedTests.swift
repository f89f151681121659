@testable import BatonFleet
import Foundation
import Testing

/// Issue 25, item 3: queries prepared once per connection, in the round trip that first sends
/// them, against a real PostgreSQL (its `pg_prepared_statements` says what the session holds).
@Suite("End to end: PostgreSQL statements prepared once per connection", .serialized, .offPool)
struct PGPreparedTests {
    @Test("a query is prepared the first time and executed by name after; BEGIN and NOTIFY are not prepared")
    func preparedOnce() throws {
        let db = try PGConnection(try Postgres.server().database())
        for value in ["1", "2", "3"] { #expect(try db.query("SELECT $1::int + 1", [value]).first?[0] == String(Int(value)! + 1)) }
        try db.execute("BEGIN")
        try db.query("NOTIFY baton")
        try db.query("COMMIT")
        #expect(db.preparedCount == 1)
        #expect(try Self.held(db) == ["SELECT $1::int + 1"])
    }

    @Test("in a pipeline: a new query twice is prepared once, and its results come in order")
    func pipelineTwice() throws {
        let db = try PGConnection(try Postgres.server().database())
        let results = try db.pipeline([("BEGIN", []), ("SELECT $1::text", ["a"]), ("SELECT $1::text", ["b"]), ("SELECT 2", []), ("COMMIT", [])])
        #expect(results.map { $0.first?[0] ?? nil } == [nil, "a", "b", "2", nil])
        #expect(db.preparedCount == 2)
        #expect(try db.pipeline([("SELECT $1::text", ["c"])]).map { $0.first?[0] ?? nil } == ["c"])
        #expect(db.preparedCount == 2)
    }

    @Test("a prepare the pipeline skipped after a failure, or the server refused, is not counted: the next use prepares again")
    func failures() throws {
        let db = try PGConnection(try Postgres.server().database())
        #expect(throws: PGError.self) { try db.pipeline([("SELECT 1/0", []), ("SELECT $1::int * 3", ["2"])]) }
        #expect(db.preparedCount == 1, "only the statement that ran (and failed) was prepared")
        #expect(try db.query("SELECT $1::int * 3", ["2"]).first?[0] == "6")
        #expect(throws: PGError.self) { try db.query("SELECT FROM WHERE") }
        #expect(try db.query("SELECT 'after'").first?[0] == "after")
        // In a transaction already failed, a new query's prepare is refused as the query would be.
        try db.execute("BEGIN")
        #expect(throws: PGError.self) { try db.query("SELECT 1/0") }
        #expect(throws: PGError.self) { try db.query("SELECT 'aborted'") }
        try db.execute("ROLLBACK")
        #expect(try db.query("SELECT 'aborted'").first?[0] == "aborted")
        #expect(Set(try Self.held(db)) == ["SELECT 1/0", "SELECT $1::int * 3", "SELECT 'after'", "SELECT 'aborted'"])
    }

    @Test("past the limit a query is sent as it is, and still answered")
    func limit() throws {
        let db = try PGConnection(try Postgres.server().database())
        for index in 0..<(PreparedStatements.limit + 10) { #expect(try db.query("SELECT \(index)").first?[0] == String(index)) }
        #expect(db.preparedCount == PreparedStatements.limit)
    }

    @Test("what is a query")
    func queries() {
        for yes in ["SELECT 1", "  insert into t values (1)", "UPDATE t SET a = 1;", "WITH x AS (SELECT 1) SELECT * FROM x", "delete from t"] {
            #expect(PreparedStatements.isQuery(yes), "\(yes)")
        }
        for no in ["BEGIN", "COMMIT", "NOTIFY baton", "LISTEN baton; LISTEN baton_output", "SELECT 1; SELECT 2", "CREATE TABLE t (a int)", ""] {
            #expect(!PreparedStatements.isQuery(no), "\(no)")
        }
    }

    static let heldQuery = "SELECT statement FROM pg_prepared_statements ORDER BY prepare_time"

    /// The statements the session holds prepared (this query among them, after its first use).
    static func held(_ db: PGConnection) throws -> [String] {
        try db.query(heldQuery).rows.compactMap { $0[0] }.filter { $0 != heldQuery }
    }
}
