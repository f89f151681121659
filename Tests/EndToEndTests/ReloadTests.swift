import BatonCore
import Foundation
import Testing

/// `baton reload` says what batond said: every warning, and a schedule change only when one happened.
@Suite("End to end: baton reload tells the truth", .offPool)
struct ReloadTests {
    @Test("""
        baton reload prints each warning batond had about the new config (a setting that changes only at restart), and \
        "schedules changed" only when an action's schedule did: not for an added action without one; away from systemd it \
        says no timer fires them; a refused config exits non-zero with batond's reason
        """)
    func warningsAndChanges() throws {
        // requireUser: false: as root, actions without user are otherwise warned of (RequireUserTests).
        let daemon = try Daemon(config: #"{ requireUser: false, actions: { a: { exec: ["true"] } } }"#)
        let quiet = try daemon.baton("reload")
        #expect(quiet.code == 0 && quiet.stdout == "reloaded\n" && quiet.stderr.isEmpty, "\(quiet.stdout) \(quiet.stderr)")

        try #"{ requireUser: false, database: "/nonexistent/elsewhere.sqlite", actions: { a: { exec: ["true"] }, b: { exec: ["true"] } } }"#
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let warned = try daemon.baton("reload")
        #expect(warned.code == 0 && warned.stdout == "reloaded\n", "an action without a schedule is no schedule change: \(warned.stdout)")
        #expect(warned.stderr == "warning: socket and database settings change only at restart\n", "\(warned.stderr)")

        try #"{ requireUser: false, database: "/nonexistent/elsewhere.sqlite", actions: { a: { exec: ["true"], schedule: "*:0/2" }, b: { exec: ["true"] } } }"#
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let scheduled = try daemon.baton("reload")
        #expect(scheduled.code == 0 && scheduled.stdout.hasPrefix("reloaded\nschedules changed: a (systemd is not the init system here"),
                "\(scheduled.stdout) \(scheduled.stderr)")
        let listed = try daemon.baton("schedules")
        #expect(listed.stderr.contains("no timer fires these schedules") && !listed.stdout.contains(":00"), "\(listed.stdout) \(listed.stderr)")

        try #"{ actions: { a: { exec: ["true"], schedule: "every other minute" } } }"#.write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        let refused = try daemon.baton("reload")
        #expect(refused.code == 2 && refused.stderr.contains("actions.a.schedule") && !refused.stdout.contains("reloaded"),
                "\(refused.stdout) \(refused.stderr)")
        daemon.stop()
    }
}
