@testable import baton_bench
import Foundation
import Testing

/// What `--runtime` gives the measured batond: the service's tmpfs runtime directory by default.
@Suite("The measured batond's runtime directory")
struct BatondRuntimeTests {
    @Test("the argument: tmpfs, none, or an absolute path; anything else refused")
    func argument() {
        #expect(BatondRuntime(argument: "tmpfs") == .tmpfs)
        #expect(BatondRuntime(argument: "none") == BatondRuntime.none)
        #expect(BatondRuntime(argument: "/run/x") == .path("/run/x"))
        #expect(BatondRuntime(argument: "run/x") == nil)
        #expect(BatondRuntime(argument: "") == nil)
    }

    @Test("tmpfs: a fresh directory under /dev/shm, mode 0700, named after the scratch directory, given as RUNTIME_DIRECTORY",
          .enabled(if: BatondShim.fileSystem("/dev/shm").hasPrefix("tmpfs "), "this machine's /dev/shm is not a tmpfs"))
    func tmpfs() throws {
        let name = "baton-bench-runtime-test-\(UUID().uuidString.prefix(8))"
        let scratch = "/tmp/" + name
        let (environment, made) = try BatondRuntime.tmpfs.prepare(scratch: scratch)
        let directory = try #require(made)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(directory == "/dev/shm/\(name)-runtime")
        #expect(environment["RUNTIME_DIRECTORY"] == directory)
        var info = stat()
        #expect(lstat(directory, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o700 && info.st_uid == geteuid())
        // Made fresh: a second run over the same name is refused, not given a directory someone else left.
        #expect(throws: (any Error).self) { try BatondRuntime.tmpfs.prepare(scratch: scratch) }
    }

    @Test("none removes an inherited RUNTIME_DIRECTORY; a path is given as is and nothing is made")
    func noneAndPath() throws {
        let inherited = ["RUNTIME_DIRECTORY": "/inherited", "PATH": "/usr/bin:/bin"]
        let none = try BatondRuntime.none.prepare(scratch: "/tmp/unused", inherited: inherited)
        #expect(none.environment == ["PATH": "/usr/bin:/bin"] && none.made == nil)
        let given = try BatondRuntime.path("/run/given").prepare(scratch: "/tmp/unused", inherited: inherited)
        #expect(given.environment == ["RUNTIME_DIRECTORY": "/run/given", "PATH": "/usr/bin:/bin"] && given.made == nil)
    }
}
