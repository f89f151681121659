@testable import batond
import BatonCore
import Foundation
import Testing

@Suite("Config: locks and limits")
struct LockConfigTests {
    @Test("locks name the locks an action holds; limits give a lock its count, 1 where it names none")
    func parsed() throws {
        let config = try Config.parse(Data(#"""
            { limits: { "heavy-io": 2 },
              actions: { migrate: { exec: ["true"], locks: ["db"] }, backup: { exec: ["true"], locks: ["db", "heavy-io"] },
                         plain: { exec: ["true"] } } }
            """#.utf8), file: "t.json5")
        let locks = Dictionary(uniqueKeysWithValues: config.actions.map { ($0.name, $0.locks) })
        #expect(locks["migrate"] == [LockClaim("db")])
        #expect(locks["backup"] == [LockClaim("db"), LockClaim("heavy-io", limit: 2)])
        #expect(locks["plain"] == [])
    }

    @Test("locks and limits load in a fleet config: each lock has a row in PostgreSQL that every start locks (FleetLocks)")
    func fleet() throws {
        #expect(problems(#"{ postgres: "dbname=x", limits: { "heavy-io": 2 }, actions: { d: { exec: ["true"], locks: ["db", "heavy-io"] } } }"#)
            == [])
        let config = try Config.parse(Data(#"""
            { postgres: "dbname=x", limits: { "heavy-io": 2 }, actions: { d: { exec: ["true"], locks: ["db", "heavy-io"] } } }
            """#.utf8), file: "t.json5")
        #expect(config.actions.first?.locks == [LockClaim("db"), LockClaim("heavy-io", limit: 2)])
    }

    @Test("bad locks and limits are refused naming the field and what is wrong", arguments: [
        (#"{ actions: { d: { exec: ["true"], locks: "db" } } }"#, ["actions.d.locks: expected an array of strings, got a string"]),
        (#"{ actions: { d: { exec: ["true"], locks: ["db", "db"] } } }"#, [#"actions.d.locks[1]: lock "db" is listed twice"#]),
        (#"{ actions: { d: { exec: ["true"], locks: ["a b"] } } }"#,
         [#"actions.d.locks[0]: "a b" is not a lock name: 1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit"#]),
        (#"{ actions: { d: { exec: ["true"], locks: [3] } } }"#, ["actions.d.locks[0]: expected a string, got a number"]),
        (#"{ limits: { db: 2 }, actions: { d: { exec: ["true"] } } }"#,
         [#"limits.db: no action holds lock "db" (no action has locks); a limit is for a lock named in an action's locks"#]),
        (#"{ limits: { dbx: 2 }, actions: { d: { exec: ["true"], locks: ["db", "io"] } } }"#,
         [#"limits.dbx: no action holds lock "dbx" (the locks: db, io); a limit is for a lock named in an action's locks"#]),
        (#"{ limits: { db: 0 }, actions: { d: { exec: ["true"], locks: ["db"] } } }"#, ["limits.db: expected a whole number from 1 to 10000, got 0"]),
        (#"{ limits: { db: 1.5 }, actions: { d: { exec: ["true"], locks: ["db"] } } }"#, ["limits.db: expected a whole number from 1 to 10000, got 1.5"]),
        (#"{ limits: [2], actions: { d: { exec: ["true"], locks: ["db"] } } }"#,
         [#"limits: expected an object of lock names to how many runs may hold each at once, such as { "heavy-io": 2 }, got an array"#]),
    ] as [(String, [String])])
    func refused(text: String, expected: [String]) {
        #expect(problems(text) == expected)
    }
}
