@testable import BatonStore
import Testing
import CSQLite

/// Text bound by `execute` is kept in the statement's buffer and read in place by SQLite; what does
/// not fit is bound as a copy; parameters are cleared only where a use may leave some unbound.
@Suite("Statement binding")
struct StatementBindingTests {
    static func connection() throws -> (TemporaryDirectory, Connection) {
        let dir = TemporaryDirectory()
        let connection = try Connection(path: dir.file("b.sqlite"))
        try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT)")
        return (dir, connection)
    }

    static func row(_ id: Int64, on connection: Connection) throws -> [DatabaseValue] {
        try connection.withStatement("SELECT a, b, c FROM t WHERE id = ?") { statement in
            try statement.bind([.integer(id)])
            #expect(try statement.step())
            return [statement.value(0), statement.value(1), statement.value(2)]
        }
    }

    /// One literal, so that every use is the same cached statement (`cached` knows it by address).
    static let insert: StaticString = "INSERT INTO t (id, a, b, c) VALUES (?, ?, ?, ?)"

    static let long = String(repeating: "é-long text ", count: 200)

    /// Three values a row: empty, short, non-ASCII; one longer than the buffer; three that overflow
    /// it together; one that fills it exactly, then two more.
    static let rows: [[String]] = [
        ["", "a", "ünïcödé ✓"],
        [long, "short", ""],
        [String(repeating: "x", count: 600), String(repeating: "y", count: 600), String(repeating: "z", count: 600)],
        [String(repeating: "x", count: TextBuffer.capacity), "", "after a full buffer"],
    ]

    @Test("text reads back as bound: empty, short, non-ASCII, longer than the buffer, and several that overflow it together",
          arguments: rows.indices)
    func textReadsBack(_ row: Int) throws {
        let values = Self.rows[row]
        let (dir, connection) = try Self.connection()
        _ = dir
        for id in Int64(1)...3 {
            try connection.cached(Self.insert) { try $0.execute(id, values[0], values[1], values[2]) }
        }
        for id in Int64(1)...3 {
            #expect(try Self.row(id, on: connection) == values.map { .text($0) })
        }
    }

    @Test("each execute keeps its own text: the rows written before are not changed by the buffer's reuse")
    func bufferReused() throws {
        let (dir, connection) = try Self.connection()
        _ = dir
        for id in Int64(1)...20 {
            try connection.cached(Self.insert) {
                try $0.execute(id, "a\(id)", DatabaseText(utf8: Array("{\"n\":\(id)}".utf8)), Optional<String>.none)
            }
        }
        for id in Int64(1)...20 {
            #expect(try Self.row(id, on: connection) == [.text("a\(id)"), .text("{\"n\":\(id)}"), .null])
        }
    }

    @Test("SQLite reads the text execute binds where the statement keeps it (SQLITE_STATIC), a String's and a DatabaseText's; text past the buffer, and bind's, are its own copies")
    func readInPlace() throws {
        let (dir, connection) = try Self.connection()
        _ = dir
        let long = String(repeating: "x", count: TextBuffer.capacity + 1)
        try connection.withStatement("SELECT ?1, ?2, ?3") { statement in
            try statement.execute("queued", DatabaseText(utf8: Array(#"{"reason":"timeout"}"#.utf8)), long)
            // `execute` stepped and reset; its bindings stay for a step of the test's own. A result
            // column holds a bound value's bytes where the binding left them (no conversion asked
            // yet: `sqlite3_column_blob` before any `_text`, which may copy to end the text).
            #expect(try statement.step())
            let kept = (0..<Int32(3)).map { statement.texts.holds(statement.sqlite.sqlite3_column_blob(statement.handle, $0)) }
            #expect(kept == [true, true, false], "read in place: the String's, the DatabaseText's, not the text past the buffer")
            #expect(statement.string(0) == "queued" && statement.string(1) == #"{"reason":"timeout"}"# && statement.string(2) == long)
            statement.reset()
            try statement.bind([.text("queued"), .null, .null])
            #expect(try statement.step())
            let copied = !statement.texts.holds(statement.sqlite.sqlite3_column_blob(statement.handle, 0))
            #expect(copied, "bind's text is SQLite's own copy")
        }
    }

    @Test("text ends at its first NUL, as a C string bound as before")
    func nul() throws {
        let (dir, connection) = try Self.connection()
        _ = dir
        try connection.cached(Self.insert) {
            try $0.execute(Int64(1), "before\u{0}after", DatabaseText(utf8: Array("x\u{0}y".utf8)), "\u{0}")
        }
        try connection.cached(Self.insert) {
            try $0.run([.integer(2), .text("before\u{0}after"), .text(Self.long + "\u{0}tail"), .text("")])
        }
        #expect(try Self.row(1, on: connection) == [.text("before"), .text("x"), .text("")])
        #expect(try Self.row(2, on: connection) == [.text("before"), .text(Self.long), .text("")])
    }

    @Test("after an execute (which binds every parameter and is not cleared), a bind of fewer values leaves the others NULL")
    func partialAfterExecute() throws {
        let (dir, connection) = try Self.connection()
        _ = dir
        try connection.cached(Self.insert) { try $0.execute(Int64(1), "a", "b", "c") }
        #expect(try connection.cached(Self.insert) { $0.bindings } == .all)
        try connection.cached(Self.insert) { statement in
            try statement.bind([.integer(2), .text("only a")])
            _ = try statement.step()
        }
        // The partial use is cleared at its reset, so that a later one starts from NULLs too.
        try connection.cached(Self.insert) { statement in
            #expect(statement.bindings == .cleared)
            try statement.bind([.integer(3)])
            _ = try statement.step()
        }
        try connection.cached(Self.insert) { try $0.execute(Int64(4), "x", Optional<String>.none, "z") }
        #expect(try Self.row(1, on: connection) == [.text("a"), .text("b"), .text("c")])
        #expect(try Self.row(2, on: connection) == [.text("only a"), .null, .null])
        #expect(try Self.row(3, on: connection) == [.null, .null, .null])
        #expect(try Self.row(4, on: connection) == [.text("x"), .null, .text("z")])
    }

    /// A use of the cached insert that fails, then the uses after it: on a scratch connection,
    /// `insert` uses it first (its rows written) and `failure` must throw; then a bind of fewer
    /// values (row 9, only `a`) and a full execute (row 10) follow, and the rows are then `expect`
    /// (nil: none), 9 and 10 as those two wrote them: nothing the failed use bound is left.
    /// Returns what `failure` threw.
    @discardableResult
    static func failThenCheck(insert: (Statement) throws -> Void = { _ in }, failure: (Statement) throws -> Void,
                              expect: [Int64: [DatabaseValue]?]) throws -> DatabaseError? {
        let (dir, connection) = try Self.connection()
        _ = dir
        try connection.cached(Self.insert, insert)
        let error = #expect(throws: DatabaseError.self) { try connection.cached(Self.insert, failure) }
        try connection.cached(Self.insert) { statement in
            try statement.bind([.integer(9), .text("only a")])
            _ = try statement.step()
        }
        try connection.cached(Self.insert) { try $0.execute(Int64(10), "x", Optional<String>.none, "z") }
        let rows = expect.merging([9: [.text("only a"), .null, .null], 10: [.text("x"), .null, .text("z")]]) { given, _ in given }
        for (id, row) in rows.sorted(by: { $0.key < $1.key }) {
            if let row {
                #expect(try Self.row(id, on: connection) == row, "row \(id)")
            } else {
                #expect(try connection.scalar("SELECT count(*) FROM t WHERE id = ?", [.integer(id)]) == .integer(0), "no row \(id)")
            }
        }
        return error
    }

    @Test("an execute whose step fails (a duplicate id) leaves nothing for a later bind of fewer values")
    func stepFails() throws {
        try Self.failThenCheck(insert: { try $0.execute(Int64(1), "a", "b", "c") },
                               failure: { try $0.execute(Int64(1), "stale a", "stale b", "stale c") },
                               expect: [1: [.text("a"), .text("b"), .text("c")]])
    }

    @Test("an execute whose bind fails partway (five values for four parameters) leaves no value of it")
    func bindFails() throws {
        let error = try Self.failThenCheck(failure: { try $0.execute(Int64(1), "stale a", "stale b", "stale c", "one too many") },
                                           expect: [1: nil])
        #expect(error?.primaryCode == SQLITE_RANGE)
    }

    @Test("an execute with fewer values than parameters throws, naming the statement, and writes nothing")
    func fewerValues() throws {
        let (dir, connection) = try Self.connection()
        _ = dir
        try connection.cached(Self.insert) { try $0.execute(Int64(1), "a", "b", "c") }
        let error = #expect(throws: DatabaseError.self) {
            try connection.cached(Self.insert) { try $0.execute(Int64(2), "only a") }
        }
        #expect(error?.primaryCode == SQLITE_MISUSE)
        #expect(error?.sql == Self.insert.description)
        #expect(error?.message == "execute bound 2 of 4 parameters")
        try connection.cached(Self.insert) { try $0.execute(Int64(3), "x", Optional<String>.none, "z") }
        #expect(try connection.scalar("SELECT count(*) FROM t WHERE id = 2") == .integer(0))
        #expect(try Self.row(3, on: connection) == [.text("x"), .null, .text("z")])
    }

    @Test("an execute told SQLITE_BUSY (another connection writing) writes its own values when run again")
    func retryAfterBusy() throws {
        let (dir, connection) = try Self.connection()
        let other = try Connection(path: dir.file("b.sqlite"))
        try connection.execute("PRAGMA busy_timeout = 0")
        try connection.cached(Self.insert) { try $0.execute(Int64(1), "a", "b", "c") }
        try other.execute("BEGIN IMMEDIATE")
        let error = #expect(throws: DatabaseError.self) {
            try connection.cached(Self.insert) { try $0.execute(Int64(2), "busy a", "busy b", "busy c") }
        }
        #expect(error?.isBusy == true)
        try other.execute("ROLLBACK")
        try connection.cached(Self.insert) { try $0.execute(Int64(2), "again a", Optional<String>.none, "again c") }
        #expect(try Self.row(2, on: connection) == [.text("again a"), .null, .text("again c")])
        #expect(try Self.row(1, on: connection) == [.text("a"), .text("b"), .text("c")])
    }

    /// One literal for the cached SELECT below.
    static let select: StaticString = "SELECT id FROM t ORDER BY id"

    @Test("execute and run reset their statement as they finish, and a use's end does not again; a use left mid-rows or failed is reset at its end")
    func resetOnce() throws {
        let (dir, connection) = try Self.connection()
        _ = dir
        let inserted = try connection.cached(Self.insert) { statement throws -> Statement in
            try statement.execute(Int64(1), "a", "b", "c")
            #expect(statement.isReset)
            return statement
        }
        #expect(inserted.isReset)
        try connection.cached(Self.insert) { try $0.run([.integer(2), .text("a"), .text("b"), .text("c")]) }
        #expect(inserted.isReset)
        // A SELECT that stops after its first row: reset by the use's end, so the next use starts over.
        for _ in 0..<2 {
            let first = try connection.cached(Self.select) { statement throws -> Int64? in
                #expect(try statement.step())
                #expect(!statement.isReset)
                return statement.int64(0)
            }
            #expect(first == 1)
        }
        // A step that fails leaves the statement to the use's end, which resets it: the next use works.
        #expect(throws: DatabaseError.self) { try connection.cached(Self.insert) { try $0.execute(Int64(1), "dup", "dup", "dup") } }
        #expect(inserted.isReset)
        try connection.cached(Self.insert) { try $0.execute(Int64(3), "x", "y", "z") }
        #expect(try Self.row(3, on: connection) == [.text("x"), .text("y"), .text("z")])
    }
}
