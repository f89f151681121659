@testable import batond
import Foundation
import Testing

/// The settings a reload cannot apply are warned of, and answered to `baton reload` (not only logged).
@Suite("Reload: what changes only at restart")
struct ReloadWarningTests {
    /// A config of action `a` (and `b` where asked) with `fields`; secrets are not read.
    static func config(_ fields: String, withB: Bool = false) throws -> Config {
        var reader = ConfigReader()
        reader.readsSecrets = false
        let b = withB ? #", b: { exec: ["true"] }"# : ""
        return try Config.parse(Data(#"{ actions: { a: { exec: ["true"] }\#(b) } \#(fields) }"#.utf8), file: "t.json5", reader: reader)
    }

    static let hooks = #"hooks: { h: { action: "a", secret: { credential: "h" }, signature: "gitlab" } }"#
    static let here = #", webhooks: { listen: "127.0.0.1:9470", \#(hooks) }"#, there = #", webhooks: { listen: "127.0.0.1:9471", \#(hooks) }"#

    @Test("the warnings between two configs", arguments: [
        ("nothing changed", "", "", false, false, []),
        ("an action added is no warning", "", "", true, false, []),
        ("the socket", "", #", socket: "/run/other.sock""#, false, false, ["socket and database settings change only at restart"]),
        ("the database", #", database: "/a.sqlite""#, #", database: "/b.sqlite""#, false, false, ["socket and database settings change only at restart"]),
        ("webhooks.listen", here, there, false, false, ["webhooks.listen changes only at restart (the hooks themselves were reloaded)"]),
        ("webhooks.listen on a socket systemd passed", here, there, false, true, []),
    ] as [(String, String, String, Bool, Bool, [String])])
    func warnings(_ story: String, old: String, new: String, addsB: Bool, passed: Bool, expected: [String]) throws {
        let warnings = Daemon.restartWarnings(old: try Self.config(old), new: try Self.config(new, withB: addsB), webhooksPassed: passed)
        #expect(warnings == expected, "\(story)")
    }
}
