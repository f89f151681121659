import BatonCore
import BatonIPC
import Foundation
import Testing

/// A run-as user looked up at each start, not once at load (issue 21, item 11).
@Suite("End to end: the run-as user is the one named, at each start", .serialized, .offPool)
struct RunAsIdentityTests {
    /// A system user made for one test, removed at the end (its uid too, if another took it).
    final class TemporaryUser {
        let name: String
        init(_ prefix: String, uid: UInt32? = nil) throws {
            name = prefix + String(UUID().uuidString.prefix(6)).lowercased()
            var arguments = ["--no-create-home", "--shell", "/bin/sh"]
            if let uid { arguments += ["-u", String(uid)] }
            let made = try execute("/usr/sbin/useradd", arguments + [name])
            try #require(made.code == 0, "cannot add user \(name): \(made.stderr)")
        }
        var uid: UInt32 { getpwnam(name)?.pointee.pw_uid ?? 0 }
        func remove() { _ = try? execute("/usr/sbin/userdel", [name]) }
        deinit { remove() }
    }

    @Test("carol deleted and her uid given to dave: the run fails naming carol, and nothing runs as dave")
    func deletedUserNeverBecomesAnother() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let carol = try TemporaryUser("bcarol")
        let uid = carol.uid
        let marker = NSTemporaryDirectory() + "baton-runas-\(UUID().uuidString)"
        let daemon = try Daemon(config: """
            { actions: { who: { exec: ["sh", "-c", "id -un; id -u > \(marker)"], user: "\(carol.name)" } } }
            """)
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let first = try daemon.baton("run", "who")
        #expect(first.code == 0, "\(first.stderr)")
        #expect(try daemon.baton("show", "1", "--output").stdout == "\(carol.name)\n")
        try FileManager.default.removeItem(atPath: marker)

        carol.remove()
        let dave = try TemporaryUser("bdave", uid: uid)
        #expect(dave.uid == uid)
        let second = try daemon.baton("run", "who")
        #expect(second.code != 0)
        let shown = try daemon.baton("show", "2").stdout
        #expect(shown.contains("no user named \"\(carol.name)\""), "\(shown)")
        #expect(!FileManager.default.fileExists(atPath: marker), "the action ran as \(dave.name), who took carol's uid")
    }

    @Test("carol recreated with another uid: the run goes as carol, under her new uid")
    func recreatedUserRunsUnderTheNewUID() throws {
        try #require(geteuid() == 0, "needs root to add users")
        let carol = try TemporaryUser("bcarol")
        let daemon = try Daemon(config: """
            { actions: { who: { exec: ["sh", "-c", "id -u"], user: "\(carol.name)" } } }
            """)
        #expect(try daemon.baton("run", "who").code == 0)
        let old = carol.uid
        carol.remove()
        let made = try execute("/usr/sbin/useradd", ["--no-create-home", "-u", String(old + 7), carol.name])
        try #require(made.code == 0, "\(made.stderr)")
        #expect(try daemon.baton("run", "who").code == 0)
        #expect(try daemon.baton("show", "2", "--output").stdout == "\(old + 7)\n")
    }
}
