import CBatonSystem
import Glibc
import Testing

/// The spawned child marks every descriptor above its standard ones close-on-exec: by
/// close_range, or where the kernel has none (before 5.11) by a loop, which must do the same.
@Suite struct CloexecFallbackTests {
    @Test("baton_cloexec_from marks descriptors from `first` on close-on-exec, by close_range and by the loop; those below are left", arguments: [0, 1])
    func marks(byLoop: Int32) throws {
        // Ascending whatever else the process has open: each the lowest free above the one before
        // (F_DUPFD), not as `open` gives them, for another test's thread may close a lower one
        // between two opens (ci37c); nor at fixed numbers, which a process under the thread
        // sanitizer may have in use already (ci37d: 700 to 1035 were).
        let below = open("/dev/null", O_RDONLY)
        try #require(below >= 0)
        let first = fcntl(below, F_DUPFD, below + 1)
        let above = fcntl(below, F_DUPFD, first + 1)
        defer { for fd in [below, first, above] { close(fd) } }
        try #require(below < first && first < above, "\(below) \(first) \(above)")
        // As the spawned child does after its fork: in a child of the test process, whose other
        // descriptors (other tests') are left alone; it says what it saw by its exit status.
        let child = fork()
        if child == 0 {
            baton_cloexec_from(first, byLoop)
            let marked = { (fd: Int32) in fcntl(fd, F_GETFD) & FD_CLOEXEC != 0 }
            _exit((marked(first) ? 0 : 1) | (marked(above) ? 0 : 2) | (marked(below) ? 4 : 0))
        }
        try #require(child > 0)
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        let code = (status >> 8) & 0xff
        #expect(code & 1 == 0, "first not marked close-on-exec")
        #expect(code & 2 == 0, "above not marked close-on-exec")
        #expect(code & 4 == 0, "below marked close-on-exec")
        #expect(status & 0x7f == 0, "the child ended by signal \(status & 0x7f)")
    }
}
