@testable import BatonProcess
import Foundation
import Testing

/// Where the attempts' shim directories go (`ShimSetup.place`): under a safe runtime directory
/// ($RUNTIME_DIRECTORY, else the packaged /run/baton), named after the database's real path and
/// the fleet host; the spool and a late status on the disk beside the database; all of it there
/// without a safe runtime directory.
@Suite("Shim directory's place")
struct ShimPlaceTests {
    static let database = "/var/lib/baton/history.sqlite"

    @Test("no safe runtime directory (none given, relative, or refused): all beside the database, as before")
    func besideDatabase() {
        for runtime in [nil, "", "relative/dir", "/run/given"] {
            let shim = ShimSetup.place(executable: "/x/baton-shim", database: Self.database, runtime: runtime, isSafe: { _ in false })
            #expect(shim.directory == "/var/lib/baton/history.sqlite-shims")
            #expect(shim.disk == shim.directory && shim.earlierDirectories.isEmpty)
            #expect(shim.places == ["/var/lib/baton/history.sqlite-shims"])
        }
        let host = ShimSetup.place(executable: "/x/baton-shim", database: Self.database, host: "web1", runtime: nil, isSafe: { _ in false })
        #expect(host.directory == "/var/lib/baton/history.sqlite-shims-web1" && host.disk == host.directory)
    }

    @Test("$RUNTIME_DIRECTORY (its first entry) first, the packaged place looked at too; without the variable the packaged place; the disk's place beside the database")
    func underRuntimeDirectory() {
        let given = ShimSetup.place(executable: "/x/baton-shim", database: Self.database, runtime: "/run/given/:/run/other",
                                    packaged: "/run/baton", isSafe: { _ in true })
        #expect(given.directory == "/run/given/shims-var-lib-baton-history.sqlite")
        #expect(given.earlierDirectories == ["/run/baton/shims-var-lib-baton-history.sqlite"])
        #expect(given.disk == "/var/lib/baton/history.sqlite-shims")
        #expect(given.places == [given.directory] + given.earlierDirectories + [given.disk])
        let packaged = ShimSetup.place(executable: "/x/baton-shim", database: Self.database, runtime: nil, packaged: "/run/baton", isSafe: { _ in true })
        #expect(packaged.directory == "/run/baton/shims-var-lib-baton-history.sqlite" && packaged.earlierDirectories.isEmpty)
        // The packaged place refused: the variable's alone.
        let refused = ShimSetup.place(executable: "/x/baton-shim", database: Self.database, runtime: "/run/given", packaged: "/run/baton",
                                      isSafe: { $0 == "/run/given" })
        #expect(refused.directory == "/run/given/shims-var-lib-baton-history.sqlite" && refused.earlierDirectories.isEmpty)
        let host = ShimSetup.place(executable: "/x/baton-shim", database: Self.database, host: "web-1", runtime: "/run/baton", isSafe: { _ in true })
        #expect(host.directory == "/run/baton/shims-var-lib-baton-history.sqlite@web\\x2d1")
        #expect(host.disk == "/var/lib/baton/history.sqlite-shims-web-1")
    }

    @Test("two databases or two fleet hosts never share a name: escaped together, long names cut and hashed, no slash, short enough for a directory",
          arguments: [(("/a-b/c", nil), ("/a/b-c", nil)), (("/a/b\\x2dc", nil), ("/a/b-c", nil)), (("/a/b", nil), ("/a-b", nil)),
                      (("/a/b", "h"), ("/a/b/h", nil)), (("/a/b", "h"), ("/a/b-h", nil)), (("/a/b", "c@d"), ("/a/b@c", "d")),
                      (("/a/b", "h"), ("/a/b", "h2")), (("/a/.b", nil), ("/a/\\x2eb", nil)), (("/a/b+c", nil), ("/a/b\\x2bc", nil)),
                      (("/" + String(repeating: "d", count: 300) + "/1", nil), ("/" + String(repeating: "d", count: 300) + "/2", nil)),
                      (("/db", String(repeating: "h", count: 253)), ("/db", String(repeating: "h", count: 252) + "i"))] as [((String, String?), (String, String?))])
    func distinct(first: (String, String?), second: (String, String?)) {
        let one = ShimSetup.runtimeName(database: first.0, host: first.1), other = ShimSetup.runtimeName(database: second.0, host: second.1)
        #expect(one != other)
        for name in [one, other] {
            #expect(name.utf8.count <= 200 && !name.contains("/") && name.hasPrefix("shims-"), "\(name)")
        }
    }

    @Test("the name is the file's, not its path's spelling: repeated slashes, dots and a symlinked directory give one name")
    func realPath() throws {
        let scratch = NSTemporaryDirectory() + "baton-place-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch + "/real", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        try FileManager.default.createSymbolicLink(atPath: scratch + "/link", withDestinationPath: scratch + "/real")
        let names = [scratch + "/real/h.sqlite", scratch + "//real/./h.sqlite", scratch + "/link/h.sqlite", scratch + "/real/../link/h.sqlite"].map {
            ShimSetup.place(executable: "/x", database: $0, runtime: "/run/r", isSafe: { _ in true }).directory
        }
        #expect(Set(names).count == 1, "\(names)")
        // The disk's place follows the path as given: the file system finds it whatever the spelling.
        #expect(ShimSetup.place(executable: "/x", database: scratch + "/link/h.sqlite", runtime: nil, isSafe: { _ in false }).disk
            == scratch + "/link/h.sqlite-shims")
    }
}

/// Which runtime directories are safe for the shims' directories (`ShimSetup.isSafeRuntime`),
/// on real files: an unsafe one is refused and batond keeps its shims beside the database.
@Suite("Shim directory's place: safety", .serialized)
struct ShimPlaceSafetyTests {
    @Test("a real directory of batond's user, writable by it alone, is safe; a symlink, another owner, group- or other-writable, or none is refused, and the place falls back to the disk")
    func safety() throws {
        let scratch = NSTemporaryDirectory() + "baton-place-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        func directory(_ name: String, mode: mode_t) throws -> String {
            let path = scratch + "/" + name
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            chmod(path, mode)
            return path
        }
        let good = try directory("good", mode: 0o755)
        let closed = try directory("closed", mode: 0o700)
        #expect(ShimSetup.isSafeRuntime(good) && ShimSetup.isSafeRuntime(closed))
        try FileManager.default.createSymbolicLink(atPath: scratch + "/link", withDestinationPath: good)
        var refused = [scratch + "/link", try directory("group", mode: 0o775), try directory("other", mode: 0o757), scratch + "/none"]
        let file = scratch + "/file"
        FileManager.default.createFile(atPath: file, contents: nil)
        refused.append(file)
        if geteuid() == 0 {
            let owned = try directory("owned", mode: 0o755)
            #expect(chown(owned, 65534, 65534) == 0)
            refused.append(owned)
        }
        for path in refused {
            #expect(!ShimSetup.isSafeRuntime(path), "\(path)")
            let shim = ShimSetup.place(executable: "/x", database: scratch + "/h.sqlite", runtime: path, packaged: scratch + "/none")
            #expect(shim.directory == scratch + "/h.sqlite-shims" && shim.places == [shim.directory], "\(path): \(shim)")
        }
        let shim = ShimSetup.place(executable: "/x", database: scratch + "/h.sqlite", runtime: scratch + "/link", packaged: good)
        #expect(shim.directory.hasPrefix(good + "/shims-") && shim.earlierDirectories.isEmpty, "\(shim)")
    }
}
