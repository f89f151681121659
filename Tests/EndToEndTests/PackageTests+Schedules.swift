import BatonCore
import Foundation
import Testing

extension PackageTests {
    @Test("""
        under systemd: from a fresh dpkg -i, the package's generator makes a timer of a *:*:0/5 schedule, which fires; each \
        run is triggered by the schedule, for a slot on the five-second grid, one per slot; baton schedules and \
        systemctl list-timers list it; purged with batond-webhooks.socket listening, the socket is stopped and \
        list-timers has no timer of baton's left; a run batond's stop handed over is cancelled by the removal, not left running
        """)
    func schedules() async throws {
        let deb = try await Self.buildDeb()
        // A network of its own: batond-webhooks.socket listens on 127.0.0.1:9470 below.
        let container = try await Container.make(privateNetwork: true)
        try FileManager.default.copyItem(atPath: deb, toPath: container.root + "/tmp/baton.deb")
        let setup = try await container.chroot("""
            dpkg -i /tmp/baton.deb &&
            sed -i 's|^  actions: {|  actions: {\\n    tick: { exec: ["true"], user: "root", schedule: "*:*:0/5" }, long: { exec: ["sleep", "600"], user: "root" },|' /etc/baton/baton.json5 &&
            test -L /usr/lib/systemd/system-generators/baton-schedule-generator
            """)
        #expect(setup.code == 0, "\(setup.stdout) \(setup.stderr)")
        try await container.boot()

        let generated = try await container.run("systemctl cat baton-schedule-tick.timer baton-schedule-tick.service")
        #expect(generated.stdout.contains("OnCalendar=*:*:0/5") && generated.stdout.contains("run tick --scheduled=now"),
                "\(generated.stdout) \(generated.stderr)")
        #expect(try await container.waitUntil("systemctl is-active -q baton-schedule-tick.timer"))
        // Two firings at least: about ten seconds.
        let fired = try await container.waitUntil("""
            [ "$(baton history -a tick --json | grep -c '"via" : "schedule"')" -ge 2 ]
            """, seconds: 40)
        let history = try await container.run("baton history -a tick --json")
        let journal = try await container.run("journalctl -u baton-schedule-tick.service --no-pager | tail -20").stdout
        #expect(fired, "\(history.stdout) \(history.stderr) \(journal)")
        let runs = try JSONDecoder().decode([RunSnapshot].self, from: Data(history.stdout.utf8))
        let slots = runs.compactMap(\.slot)
        #expect(runs.allSatisfy { $0.via == "schedule" && $0.slot != nil }, "\(history.stdout)")
        #expect(slots.allSatisfy { $0.rawValue % 5_000_000 == 0 }, "slots on the grid: \(slots)")
        #expect(Set(slots).count == slots.count, "one run per slot: \(slots)")
        #expect(runs.filter { $0.phase.isTerminal }.allSatisfy { $0.phase == .success }, "\(history.stdout)")

        let listed = try await container.run("baton schedules")
        #expect(listed.stdout.contains("tick") && listed.stdout.contains("*:*:0/5"), "\(listed.stdout) \(listed.stderr)")
        let timers = try await container.run("systemctl list-timers --all --no-pager baton-schedule-tick.timer")
        #expect(timers.stdout.contains("baton-schedule-tick.timer"), "\(timers.stdout)")
        try await purged(container)
    }

    /// Issue 37, item 20: `dpkg -P` leaves no timer of baton's in list-timers and no socket of its
    /// listening, and takes the links `systemctl enable` made and the generator's record with it.
    func purged(_ container: Container) async throws {
        let long = try await container.run("baton run long --detach")
        #expect(long.code == 0, "\(long.stdout) \(long.stderr)")
        // systemd starts no socket whose service runs already: batond is stopped first (the timer's next press starts it again).
        // The stop hands the long run over: its sleep goes on, for a next batond to adopt.
        let listening = try await container.run("systemctl stop batond.service && systemctl enable --now batond.socket batond-webhooks.socket")
        #expect(listening.code == 0, "\(listening.stdout) \(listening.stderr)")
        // The run's sleep, read from /proc (minbase has no pgrep).
        let sleeping = #"for p in /proc/[0-9]*; do [ "$(tr "\0" " " < $p/cmdline 2>/dev/null)" = "sleep 600 " ] && echo $p; done; true"#
        #expect(try await container.run(sleeping).stdout != "", "the handed-over run's process lives on after batond's stop")
        #expect(try await container.run("systemctl is-active batond-webhooks.socket").stdout == "active\n")
        let purge = try await container.run("dpkg -P baton")
        #expect(purge.code == 0, "\(purge.stdout) \(purge.stderr)")
        let timers = try await container.run("systemctl list-timers --all --no-pager --no-legend")
        #expect(timers.code == 0 && !timers.stdout.contains("baton"), "\(timers.stdout) \(timers.stderr)")
        // The removal cancelled the long run (its end is in the journal) and nothing of it is left.
        let left = try await container.run(sleeping).stdout
        #expect(left == "", "still running after the removal: \(left)")
        // journald files what batond sent it asynchronously (CI ci29a read the journal before the cancel
        // was in it): --sync returns once everything sent before it is written.
        let ended = try await container.run("journalctl --sync && journalctl BATON_ACTION=long -o cat --no-pager")
        #expect(ended.stdout.contains("loading → cancelled"), "\(ended.stdout) \(ended.stderr)")
        for unit in ["batond-webhooks.socket", "batond.socket", "batond.service", "baton-schedule-tick.timer"] {
            let state = try await container.run("systemctl show -p ActiveState --value \(unit)").stdout
            #expect(state == "inactive\n", "\(unit): \(state)")
        }
        for path in ["etc/systemd/system/sockets.target.wants/batond-webhooks.socket", "etc/systemd/system/sockets.target.wants/batond.socket",
                     "var/lib/baton/schedule-units.json"] {
            #expect(!FileManager.default.fileExists(atPath: container.root + "/" + path), "\(path)")
        }
    }
}
