@testable import BatonCore
@testable import BatonEngine
import Testing

/// `LockBook` rebuilt as the fleet does (`hold`, `enqueue`) decides as the book one machine
/// builds with `take`: `mayTake` is `admit`'s pass for one run.
@Suite("LockBook: rebuilt from holders and a line")
struct LockBookRebuildTests {
    @Test("a book rebuilt from holders and a line answers as the one that took and waited")
    func sameAsTaken() {
        var taken = LockBook()
        var reserved: [String: Int] = [:]
        taken.register(1, action: "migrate", locks: [LockClaim("db")])
        taken.register(2, action: "backup", locks: [LockClaim("db"), LockClaim("io", limit: 2)])
        taken.register(3, action: "scan", locks: [LockClaim("io", limit: 2)])
        #expect(taken.take(1, reserved: &reserved))
        #expect(!taken.take(2, reserved: &reserved))
        #expect(taken.take(3, reserved: &reserved))   // io: 2 reserved one place of two

        var rebuilt = LockBook()
        rebuilt.hold(1, action: "migrate", locks: [LockClaim("db")])
        rebuilt.hold(3, action: "scan", locks: [LockClaim("io", limit: 2)])
        rebuilt.enqueue(2, action: "backup", locks: [LockClaim("db"), LockClaim("io", limit: 2)])
        #expect(rebuilt.held == taken.held && rebuilt.waiting == taken.waiting)
        #expect(rebuilt.wait(of: 2) == taken.wait(of: 2))
        #expect(rebuilt.holds(1) && rebuilt.holds(3) && !rebuilt.holds(2))
    }

    @Test("mayTake: free locks with no older waiter, yes; a full lock or an older waiter wanting it, no; held already, no")
    func mayTake() {
        var book = LockBook()
        book.hold(1, action: "migrate", locks: [LockClaim("db")])
        book.enqueue(2, action: "backup", locks: [LockClaim("db"), LockClaim("io", limit: 2)])
        book.enqueue(3, action: "scan", locks: [LockClaim("io", limit: 2)])
        book.enqueue(4, action: "index", locks: [LockClaim("io", limit: 2)])
        book.enqueue(5, action: "free", locks: [LockClaim("other")])
        #expect(!book.mayTake(2))            // db is held by 1
        #expect(book.mayTake(3))             // io: 2 reserves one place, 3 takes the other
        #expect(!book.mayTake(4))            // io: 2 and 3 are ahead of it
        #expect(book.mayTake(5))
        #expect(!book.mayTake(1))            // it holds them already
        #expect(book.mayTake(9))             // a run without locks takes none and is never refused
        book.enqueue(3, action: "scan", locks: [LockClaim("io", limit: 1)])
        #expect(book.locks(of: 3) == [LockClaim("io", limit: 2)], "a run already known keeps its place and claims")
    }
}
