@testable import BatonProcess
import Testing

/// Where the attempts' shim directories go (`ShimSetup.place`): under systemd's runtime
/// directory when it gives one, named after the database; else beside the database.
@Suite("Shim directory's place")
struct ShimPlaceTests {
    @Test("without a runtime directory: beside the database, as before, and nothing earlier to look at")
    func besideDatabase() {
        for runtime in [nil, "", "relative/dir"] {
            let shim = ShimSetup.place(executable: "/x/baton-shim", database: "/var/lib/baton/history.sqlite", runtime: runtime)
            #expect(shim.directory == "/var/lib/baton/history.sqlite-shims")
            #expect(shim.earlierDirectories.isEmpty)
        }
    }

    @Test("under $RUNTIME_DIRECTORY (its first entry): named after the database, the place beside it looked at too; a fleet host's suffix on both")
    func underRuntimeDirectory() {
        let shim = ShimSetup.place(executable: "/x/baton-shim", database: "/var/lib/baton/history.sqlite", runtime: "/run/baton:/run/other")
        #expect(shim.directory == "/run/baton/shims-var-lib-baton-history.sqlite")
        #expect(shim.earlierDirectories == ["/var/lib/baton/history.sqlite-shims"])
        let host = ShimSetup.place(executable: "/x/baton-shim", database: "/var/lib/baton/history.sqlite", runtime: "/run/baton", suffix: "-web1")
        #expect(host.directory == "/run/baton/shims-var-lib-baton-history.sqlite-web1")
        #expect(host.earlierDirectories == ["/var/lib/baton/history.sqlite-shims-web1"])
    }

    @Test("two databases never share a directory: dashes and backslashes escaped, long paths cut and hashed",
          arguments: [("/a-b/c", "/a/b-c"), ("/a/b\\x2dc", "/a/b-c"), ("/a/b", "/a-b"),
                      ("/" + String(repeating: "d", count: 300) + "/1", "/" + String(repeating: "d", count: 300) + "/2")])
    func distinct(first: String, second: String) {
        let one = ShimSetup.databaseName(first), other = ShimSetup.databaseName(second)
        #expect(one != other)
        #expect(one.utf8.count <= 200 && other.utf8.count <= 200)
        #expect(!one.contains("/") && !other.contains("/"))
    }
}
