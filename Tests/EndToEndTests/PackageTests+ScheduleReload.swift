import BatonCore
import Foundation
import Testing

extension PackageTests {
    static let reloadStory = """
        { actions: { hello: { exec: ["true"] HELLO }, nightly: { exec: ["true"], schedule: "*-*-* 03:00:00" } } }
        """

    /// Writes the config of the story inside the container, hello's extra fields given.
    static func writeStory(_ container: Container, hello: String) async throws {
        let text = reloadStory.replacingOccurrences(of: " HELLO", with: hello.isEmpty ? "" : ", " + hello)
        try text.write(toFile: container.root + "/etc/baton/baton.json5", atomically: true, encoding: .utf8)
    }

    /// A timer's `systemctl show` properties, `Key=Value` lines.
    static func timer(_ container: Container, _ action: String) async throws -> String {
        try await container.run("systemctl show -p LoadState,ActiveState,SubState,NextElapseUSecRealtime,TimersCalendar baton-schedule-\(action).timer").stdout
    }

    /// Whether a timer's properties say it is armed: active, and waiting with a next elapse, or running (it just
    /// elapsed and its service is active; systemd clears the next elapse until the service ends). A timer of every
    /// few seconds is caught running now and then, which is as armed as waiting.
    static func armed(_ properties: String) -> Bool {
        guard properties.contains("LoadState=loaded"), properties.contains("ActiveState=active") else { return false }
        if properties.contains("SubState=running") { return true }
        return properties.contains("SubState=waiting") && !properties.contains("NextElapseUSecRealtime=\n")
    }

    @Test("""
        under systemd, schedules follow the config: a schedule added by baton reload starts its timer, which fires; one \
        changed by systemctl reload batond is restarted with its new expression; a broken config at daemon-reload keeps \
        the last good timers (none failed) and systemctl reload batond fails on it; fixed and reloaded, then the schedule \
        removed, the timer is stopped and gone; baton schedules shows each timer's state from systemd
        """)
    func schedulesFollowTheConfig() async throws {
        let deb = try await Self.buildDeb()
        let container = try await Container.make()
        try FileManager.default.copyItem(atPath: deb, toPath: container.root + "/tmp/baton.deb")
        #expect(try await container.chroot("dpkg -i /tmp/baton.deb").code == 0)
        try await Self.writeStory(container, hello: "")
        try await container.boot()
        #expect(try await container.run("systemctl start batond.service").code == 0)
        #expect(try await container.waitUntil("test -s /var/lib/baton/schedule-units.json"), "batond keeps the last good schedules")

        // Added: the timer is started, armed, and fires.
        try await Self.writeStory(container, hello: #"schedule: "*:*:0/5""#)
        let added = try await container.run("baton reload")
        #expect(added.code == 0 && added.stdout == "reloaded\nschedules changed: started baton-schedule-hello.timer\n", "\(added.stdout) \(added.stderr)")
        let armed = try await Self.timer(container, "hello")
        #expect(Self.armed(armed), "\(armed)")
        // Read whole into a file, then searched (no pipe a reader may close early); on a failure the
        // story says what the JSON held and what baton said on stderr.
        let fired = try await container.waitUntil(#"baton history -a hello --json > /tmp/h.json 2> /tmp/h.err && grep '"via" : "schedule"' /tmp/h.json > /dev/null"#,
                                                  seconds: 60)
        let story = fired ? "" : try await container.run("baton history -a hello; head -c 2000 /tmp/h.json; cat /tmp/h.err; journalctl -b --no-pager | tail -30").stdout
        #expect(fired, "\(story)")
        let listed = try await container.run("baton schedules --json")
        #expect(listed.stdout.contains(#""active" : "active""#) && listed.stdout.contains(#""next" : "#) && listed.stdout.contains(#""lastTrigger" : "#),
                "\(listed.stdout) \(listed.stderr)")

        // Changed through the unit's reload (ExecReload runs baton reload).
        try await Self.writeStory(container, hello: #"schedule: "*:*:2/10""#)
        #expect(try await container.run("systemctl reload batond.service").code == 0)
        let changed = try await Self.timer(container, "hello")
        // systemd writes the expression back normalized: *:*:2/10 is *-*-* *:*:02/10.
        #expect(changed.contains("*:*:02/10") && changed.contains("ActiveState=active"), "\(changed)")

        // Broken on disk at a daemon-reload: the last good timers stay, none failed; the unit's reload fails.
        try await Self.writeStory(container, hello: #"schedule: "every other second""#)
        #expect(try await container.run("systemctl daemon-reload").code == 0)
        for action in ["hello", "nightly"] {
            let kept = try await Self.timer(container, action)
            #expect(Self.armed(kept), "\(action): \(kept)")
        }
        #expect(try await Self.timer(container, "hello").contains("*:*:02/10"))
        #expect(try await container.run("systemctl --failed --no-legend | grep baton").stdout.isEmpty)
        let generatorSaid = try await container.run("journalctl -b --no-pager -o cat -t baton-schedule-generator")
        #expect(generatorSaid.stdout.contains("keeping the timers of the config batond last applied"), "\(generatorSaid.stdout)")
        let refused = try await container.run("systemctl reload batond.service")
        #expect(refused.code != 0, "systemctl reload batond must fail on a refused config: \(refused.stdout) \(refused.stderr)")
        #expect(try await container.run("systemctl is-active batond.service").stdout.hasPrefix("active"))

        // Fixed and reloaded, then the schedule removed: stopped and gone.
        try await Self.writeStory(container, hello: #"schedule: "*:*:2/10""#)
        #expect(try await container.run("systemctl reload batond.service").code == 0)
        try await Self.writeStory(container, hello: "")
        let removed = try await container.run("baton reload")
        #expect(removed.code == 0 && removed.stdout == "reloaded\nschedules changed: stopped baton-schedule-hello.timer\n", "\(removed.stdout) \(removed.stderr)")
        let gone = try await Self.timer(container, "hello")
        #expect(gone.contains("LoadState=not-found") && gone.contains("ActiveState=inactive"), "\(gone)")
        let table = try await container.run("baton schedules")
        #expect(!table.stdout.contains("hello") && table.stdout.contains("nightly") && table.stdout.contains("active (waiting)"),
                "\(table.stdout) \(table.stderr)")
    }
}
