@testable import batond
import Foundation
import Testing

/// An `exec` program missing or not executable at load is a warning, not a refusal (issue 37, item 19).
@Suite("Config: exec programs checked at load")
struct ExecWarningTests {
    /// A directory with a file of each mode the table needs: `tool-755`, `tool-644`, `tool-700`.
    static let directory: String = {
        let directory = NSTemporaryDirectory() + "baton-exec-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for mode in ["755", "644", "700"] {
            let path = directory + "/tool-" + mode
            FileManager.default.createFile(atPath: path, contents: Data("#!/bin/sh\n".utf8))
            chmod(path, mode_t(mode, radix: 8)!)
        }
        return directory
    }()

    static func warnings(_ program: String, user: String? = nil) throws -> [String] {
        let field = user.map { #", user: "\#($0)""# } ?? ""
        // requireUser: false: the warning of actions with no user (batond runs as root here) is not the one tested.
        let config = try Config.parse(Data(#"{ requireUser: false, actions: { a: { exec: ["\#(program)", "x"]\#(field) } } }"#.utf8), file: "c")
        return config.warnings
    }

    @Test("the warning for each program, as batond's user", arguments: [
        ("a program that is there and executable", "/bin/sh", nil),
        ("a bare name, looked up in PATH at each run", "no-such-baton-tool", nil),
        ("a path that does not exist", "/nonexistent/baton-tool", "c: actions.a.exec: /nonexistent/baton-tool does not exist: each run fails until it is there"),
        ("a directory", "/", "c: actions.a.exec: / is not a file: each run fails until it is one"),
        ("a file without execute bits", "$DIR/tool-644", "c: actions.a.exec: $DIR/tool-644 is not executable by batond's user (mode 644): each run fails until it is"),
        ("a file with them", "$DIR/tool-755", nil),
    ] as [(String, String, String?)])
    func asBatond(_ story: String, program: String, expected: String?) throws {
        let dir = Self.directory
        let found = try Self.warnings(program.replacingOccurrences(of: "$DIR", with: dir))
        #expect(found == (expected.map { [$0.replacingOccurrences(of: "$DIR", with: dir)] } ?? []), "\(story)")
    }

    @Test("as the action's user: a file only its owner (root) may run is warned of for nobody", .enabled(if: geteuid() == 0))
    func asActionUser() throws {
        let dir = Self.directory
        #expect(try Self.warnings(dir + "/tool-700", user: "nobody") == ["c: actions.a.exec: \(dir)/tool-700 is not executable by nobody (mode 700): each run fails until it is"])
        #expect(try Self.warnings(dir + "/tool-755", user: "nobody") == [])
        #expect(try Self.warnings(dir + "/tool-700") == [])
    }

    @Test("who may execute, as the kernel decides", arguments: [
        ("root with any execute bit", 0o001, 5, 5, 0, [0], true),
        ("root with none", 0o644, 5, 5, 0, [0], false),
        ("the owner by the owner's bit alone", 0o100, 7, 5, 7, [5], true),
        ("the owner, not by the group's bit", 0o010, 7, 5, 7, [5], false),
        ("a group member by the group's bit", 0o010, 1, 5, 7, [5], true),
        ("a group member, not by the others' bit", 0o001, 1, 5, 7, [5], false),
        ("anyone else by the others' bit", 0o001, 1, 5, 7, [6], true),
    ] as [(String, UInt32, UInt32, UInt32, UInt32, [UInt32], Bool)])
    func mayExecute(_ story: String, mode: UInt32, owner: UInt32, group: UInt32, uid: UInt32, groups: [UInt32], expected: Bool) {
        #expect(ConfigReader.mayExecute(mode: mode, owner: owner, group: group, uid: uid, groups: Set(groups)) == expected, "\(story)")
    }
}
