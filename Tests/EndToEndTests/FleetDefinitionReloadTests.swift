import BatonCore
import BatonFleet
import BatonIPC
import Foundation
import Testing

/// A fleet's run keeps the definition it was triggered with across a reload, as one machine's
/// does (audit D4; README: "A run keeps the locks of the definition it was triggered with across
/// a reload"): its start reads the fingerprint its row keeps, not the action as configured now.
@Suite("End to end: a fleet's run keeps its definition across a reload", .serialized, .offPool)
struct FleetDefinitionReloadTests {
    typealias Marks = FleetLockTests.Marks

    /// x (keyed by n, `queue`) holds `xLocks`; y holds db. Both gated (`Marks.release`).
    static func config(_ marks: Marks, host: Int, conninfo: String, xLocks: String) -> String {
        let gated = #"f=\"$DIR/gate-$BATON_RUN_ID\"; mkfifo \"$f\"; echo start $BATON_RUN_ID >> \"$DIR/log\"; cat \"$f\" > /dev/null; echo end $BATON_RUN_ID >> \"$DIR/log\""#
        return """
            { postgres: "\(conninfo)", host: "web-\(host)", lease: "15s", maxConcurrentRuns: 8,
              actions: {
                x: { exec: ["sh", "-c", "\(gated)"], env: { DIR: "\(marks.directory)" }, locks: \(xLocks),
                     params: { n: { default: "0" } }, keyParams: ["n"], policy: "queue" },
                y: { exec: ["sh", "-c", "\(gated)"], env: { DIR: "\(marks.directory)" }, locks: ["db"] },
              } }
            """
    }

    @Test("a follow-up queued before a reload that adds a lock starts with the locks it was triggered with (none), while another run holds that lock; a trigger after the reload waits for it")
    func followUpKeepsItsLocks() throws {
        let marks = try Marks()
        let conninfo = try Postgres.server().database()
        let hosts = try (1...2).map { index in
            let host = try Daemon(config: Self.config(marks, host: index, conninfo: conninfo, xLocks: "[]"))
            try host.waitForLog("joined the fleet")
            return host
        }
        defer { for host in hosts { host.stop() } }
        let trigger = { (action: String, n: String) in
            try Client(path: hosts[0].socket).call(Request(op: .trigger, action: action, params: action == "x" ? ["n": n] : [:], detach: true))
        }
        let first = try #require(try trigger("x", "0").run)
        try #require(marks.waitForStarts(1))
        let followUp = try #require(try trigger("x", "0").run)
        #expect(followUp.phase == .queued && followUp.id != first.id, "\(followUp)")
        let holder = try #require(try trigger("y", "").run)
        try #require(marks.waitForStarts(2) && marks.starts == [first.id, holder.id], "\(marks.lines)")
        for (index, host) in hosts.enumerated() {
            try Self.config(marks, host: index + 1, conninfo: conninfo, xLocks: #"["db"]"#).write(toFile: host.configPath, atomically: true, encoding: .utf8)
            let reloaded = try host.baton("reload")
            #expect(reloaded.code == 0, "\(reloaded.stderr)")
        }
        // A trigger after the reload claims db, held by y: it waits in line.
        let later = try #require(try trigger("x", "1").run)
        #expect(later.phase == .queued && later.waiting?.lock == "db", "\(later)")
        // x's first run ends: its follow-up starts at once, without db, which y still holds.
        marks.release(first.id)
        try #require(marks.waitForStarts(3), "the follow-up waits for db: \(marks.lines)\n\(hosts[0].stderr.suffix(2_000))")
        #expect(marks.starts == [first.id, holder.id, followUp.id], "\(marks.lines)")
        marks.release(followUp.id)
        marks.release(holder.id)
        #expect(try FleetTests.wait(hosts[1], run: followUp.id)?.phase == .success)
        try #require(marks.waitForStarts(4), "\(marks.lines)")
        marks.release(later.id)
        #expect(try FleetTests.wait(hosts[1], run: later.id)?.phase == .success)
        let story = try hosts[1].baton("show", String(followUp.id)).stdout
        #expect(story.contains("queued → loading  (attempt 1)") && !story.contains("took lock"), "\(story)")
        let after = try hosts[1].baton("show", String(later.id)).stdout
        #expect(after.contains("took lock db"), "\(after)")
    }
}
