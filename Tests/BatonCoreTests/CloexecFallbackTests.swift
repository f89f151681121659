import CBatonSystem
import Glibc
import Testing

/// The spawned child marks every descriptor above its standard ones close-on-exec: by
/// close_range, or where the kernel has none (before 5.11) by a loop, which must do the same.
@Suite struct CloexecFallbackTests {
    @Test("baton_cloexec_from marks descriptors from `first` on close-on-exec, by close_range and by the loop; those below are left", arguments: [0, 1])
    func marks(byLoop: Int32) throws {
        // Numbered apart, at least 700, 800 and 900 (F_DUPFD: the lowest free from there), not as
        // `open` gives them: another test's thread may close a lower one between two opens (CI, 37c).
        let null = open("/dev/null", O_RDONLY)
        try #require(null >= 0)
        let below = fcntl(null, F_DUPFD, 700), first = fcntl(null, F_DUPFD, 800), above = fcntl(null, F_DUPFD, 900)
        close(null)
        defer { for fd in [below, first, above] { close(fd) } }
        try #require(below >= 700 && below < 800 && first >= 800 && first < 900 && above >= 900, "\(below) \(first) \(above)")
        // The child does this after its fork; here it marks the test process's descriptors from 800
        // (none but these, in practice), which only keeps them from children that exec.
        baton_cloexec_from(first, byLoop)
        #expect(fcntl(first, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(above, F_GETFD) & FD_CLOEXEC != 0)
        #expect(fcntl(below, F_GETFD) & FD_CLOEXEC == 0)
    }
}
