@testable import batond
import Foundation
import Testing

/// `requireUser`: an action without `user` runs as batond's user, root for the service, for
/// whoever may trigger it; the config refuses it, warns of it, or says it is meant.
@Suite("Config: actions that name no user")
struct RequireUserTests {
    /// The config's problems and warnings (paths and messages) as a batond running as root, or not, reads it.
    static func read(_ text: String, root: Bool) -> (problems: [String], warnings: [String]) {
        var reader = ConfigReader()
        reader.runsAsRoot = root
        reader.readsSecrets = false
        do {
            let config = try Config.parse(Data(text.utf8), file: "t", reader: reader)
            return ([], config.warnings)
        } catch {
            return (error.problems.map { "\($0.path): \($0.message)" }, [])
        }
    }

    static let refused = #"missing, and requireUser is true: name the user it runs as, user: "root" if it must run as root"#

    @Test("requireUser: true refuses each action without user, naming it and the fix; one that names root or another user passes", arguments: [
        (#"{ requireUser: true, actions: { deploy: { exec: ["x"] }, hello: { exec: ["x"], user: "root" } } }"#, true, ["actions.deploy.user: " + refused]),
        (#"{ requireUser: true, actions: { b: { exec: ["x"] }, a: { exec: ["x"] } } }"#, false, ["actions.a.user: " + refused, "actions.b.user: " + refused]),
        (#"{ requireUser: true, actions: { hello: { exec: ["x"], user: "root" } } }"#, true, []),
        (#"{ requireUser: true, actions: {} }"#, true, []),
        (#"{ requireUser: "yes", actions: { hello: { exec: ["x"], user: "root" } } }"#, true, ["requireUser: expected true or false, got a string"]),
    ] as [(String, Bool, [String])])
    func refusal(_ text: String, root: Bool, expected: [String]) {
        let found = Self.read(text, root: root).problems
        #expect(found.count == expected.count && zip(found, expected).allSatisfy { $0.hasPrefix($1) }, "\(found)")
    }

    @Test("unset, a root batond warns once naming every such action; not as another user, nor with requireUser: false", arguments: [
        (#"{ actions: { deploy: { exec: ["x"] }, backup: { exec: ["x"] }, hello: { exec: ["x"], user: "root" } } }"#, true,
         #"t: actions: backup, deploy name no user, so batond (root) runs them as root for whoever may trigger them: give each a user (user: "root" if you mean it)"#),
        (#"{ actions: { deploy: { exec: ["x"] } } }"#, true, "t: actions: deploy names no user, so batond (root) runs it as root for whoever may trigger it"),
        (#"{ actions: { deploy: { exec: ["x"] } } }"#, false, nil),
        (#"{ requireUser: false, actions: { deploy: { exec: ["x"] } } }"#, true, nil),
    ] as [(String, Bool, String?)])
    func warning(_ text: String, root: Bool, expected: String?) {
        let read = Self.read(text, root: root)
        #expect(read.problems.isEmpty, "\(read.problems)")
        if let expected {
            #expect(read.warnings.count == 1 && read.warnings[0].hasPrefix(expected), "\(read.warnings)")
        } else {
            #expect(read.warnings.isEmpty, "\(read.warnings)")
        }
    }

    @Test("a config with no action is valid (the package's ships so), with a warning pointing at the demo config")
    func noAction() {
        let read = Self.read("{ requireUser: true, actions: { /* deploy: { … } */ } }", root: true)
        #expect(read.problems.isEmpty && read.warnings == [
            "t: actions: none: batond runs nothing until one is added (a demo config: /usr/share/doc/baton/examples/baton.json5)",
        ], "\(read)")
    }

    @Test("the config the package installs in /etc/baton has no live action and requires a user; it is valid")
    func packagedConfig() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../packaging/baton.json5")
        let config = try Config.load(path: url.standardizedFileURL.path)
        #expect(config.actions.isEmpty)
        let text = try String(contentsOf: url, encoding: .utf8)
        #expect(text.contains("\n  requireUser: true,"))
        let uncommented = text.replacingOccurrences(of: "\n    // ", with: "\n    ")
        #expect(Self.read(uncommented, root: true).problems.isEmpty, "its commented example is a valid action once uncommented")
    }
}
