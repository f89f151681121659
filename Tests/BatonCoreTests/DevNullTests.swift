import CBatonSystem
import Foundation
import Testing

/// The /dev/null a spawned child gets as its stdin is opened once and kept, but each use checks the
/// number is still /dev/null: a stray close elsewhere, its number reused by another open, must not
/// give every later child a file of batond's as its stdin.
@Suite("One /dev/null for the spawns")
struct DevNullTests {
    static func isDevNull(_ fd: Int32) -> Bool {
        var got = stat(), null = stat()
        return fstat(fd, &got) == 0 && stat("/dev/null", &null) == 0 && got.st_rdev == null.st_rdev && got.st_ino == null.st_ino
    }

    @Test("kept while it is /dev/null, above the standard descriptors; opened again when its number became another file")
    func reopened() throws {
        var slot = baton_null(fd: -1, rdev: 0, ino: 0)
        let first = baton_null_fd(&slot)
        #expect(first > 2 && Self.isDevNull(first))
        #expect(baton_null_fd(&slot) == first)
        // A stray close and a reuse of the number by another open, as one step (dup2 over it).
        let path = NSTemporaryDirectory() + "baton-devnull-" + UUID().uuidString
        let other = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        #expect(other >= 0)
        defer { close(other); unlink(path) }
        #expect(dup2(other, first) == first)
        let second = baton_null_fd(&slot)
        #expect(second != first && second > 2 && Self.isDevNull(second))
        #expect(!Self.isDevNull(first))
        #expect(baton_null_fd(&slot) == second)
        close(first)
        close(second)
    }
}
