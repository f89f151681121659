import BatonCore
import Foundation
import Testing

/// The release binaries, the Debian package, and batond under a real systemd in a container.
@Suite("End to end: the .deb and a real systemd", .serialized, .offPool)
struct PackageTests {
    static let repository = Container.repository
    private static let built = Locked<String?>(nil)

    /// The release binaries `make build` makes (scripts/test runs it first); built here, in a
    /// scratch directory of their own, when they are missing.
    static func releaseDirectory() async throws -> String {
        let built = repository + "/.build/release"
        if ["batond", "baton"].allSatisfy({ FileManager.default.isExecutableFile(atPath: built + "/" + $0) }) { return built }
        let scratch = repository + "/.build/static"
        // The Makefile's own flags, in a build directory of its own (SwiftPM locks .build while testing).
        let result = try await run("/usr/bin/make", ["-C", repository, "build", "SCRATCH=" + scratch], within: buildLimit)
        guard result.code == 0 else { throw ContainerError.failed("make build: \(result.stderr.suffix(2_000))") }
        return scratch + "/release"
    }

    /// The package (built by the first test that asks; the suite is serialized).
    static func buildDeb() async throws -> String {
        if let built = built.withLock({ $0 }) { return built }
        let result = try await run(repository + "/scripts/build-deb", [], environment: ["BUILD_DIR": try await releaseDirectory()], within: buildLimit)
        guard result.code == 0 else { throw ContainerError.failed("build-deb: \(result.stderr)") }
        let path = repository + "/" + result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        built.withLock { $0 = path }
        return path
    }

    @Test("""
        the release binaries carry the Swift runtime: they need only libc, libm, libstdc++ and libgcc_s; \
        libsqlite3, libpq and libcrypto are no direct dependency (the store opens libsqlite3, a fleet libpq, webhooks libcrypto)
        """)
    func noToolchainNeeded() async throws {
        let directory = try await Self.releaseDirectory()
        let allowed = ["libc.so.6", "libm.so.6", "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2"]
        for binary in ["batond", "baton"] {
            // What the binary itself asks for; libsqlite3 the store opens (a `baton` that asks batond
            // never does), libpq (and all it brings) only a fleet's batond, libcrypto webhooks.
            let headers = try await run("/usr/bin/objdump", ["-p", directory + "/" + binary])
            #expect(headers.code == 0, "\(headers.stderr)")
            let needed = headers.stdout.split(separator: "\n").filter { $0.contains("NEEDED") }.compactMap { $0.split(separator: " ").last.map(String.init) }
            #expect(!needed.isEmpty)
            for library in needed { #expect(allowed.contains(library), "\(binary) needs \(library)") }
            #expect(!needed.contains { $0.hasPrefix("libpq") || $0.hasPrefix("libcrypto") || $0.hasPrefix("libsqlite3") },
                    "\(binary) links libpq, libcrypto or libsqlite3")
            // No RUNPATH: libpq and libcrypto are opened by name, and a `$ORIGIN` there would look
            // for them first beside the binary (a root batond in a directory a user can write to).
            #expect(!headers.stdout.contains("RUNPATH") && !headers.stdout.contains("RPATH"), "\(binary) has a library search path")
            let ldd = try await run("/usr/bin/ldd", [directory + "/" + binary])
            #expect(ldd.code == 0 && !ldd.stdout.contains("swift"), "\(binary): \(ldd.stdout)")
        }
    }

    @Test("""
        make deb: lintian has no error or warning, no placeholder maintainer or homepage; dpkg installs it into a Debian tree \
        with no live action in /etc/baton (the demo config under /usr/share/doc/baton/examples), where an action that names \
        no user is refused; it removes it keeping the config, and purges it
        """)
    func debianPackage() async throws {
        let deb = try await Self.buildDeb()
        let lintian = try await run("/usr/bin/lintian", ["--tag-display-limit", "0", deb])
        let findings = lintian.stdout.split(separator: "\n").filter { $0.hasPrefix("E:") || $0.hasPrefix("W:") }
        #expect(findings.isEmpty, "\(findings)")
        let info = try await run("/usr/bin/dpkg-deb", ["-f", deb, "Package", "Depends"])
        // libpq is opened, not linked, by a fleet's batond: the package still brings it.
        #expect(info.stdout.contains("Package: baton") && info.stdout.contains("libsqlite3-0") && info.stdout.contains("libpq5"))
        let fields = try await run("/usr/bin/dpkg-deb", ["-f", deb, "Maintainer", "Homepage"])
        #expect(fields.stdout == "Maintainer: Baton developers <baton@baton.localhost>\n", "\(fields.stdout)")

        let tree = try await Container.make()
        try FileManager.default.copyItem(atPath: deb, toPath: tree.root + "/tmp/baton.deb")
        let install = try await tree.chroot("dpkg -i /tmp/baton.deb")
        #expect(install.code == 0, "\(install.stdout) \(install.stderr)")
        let modes: [(String, Int)] = [
            ("usr/bin/batond", 0o755), ("usr/bin/baton", 0o755), ("usr/lib/systemd/system/batond.service", 0o644),
            ("usr/lib/systemd/system/batond.socket", 0o644), ("usr/lib/sysusers.d/baton.conf", 0o644),
            ("usr/lib/tmpfiles.d/baton.conf", 0o644), ("usr/share/man/man8/batond.8.gz", 0o644),
            ("usr/share/doc/baton/copyright", 0o644), ("etc/baton/baton.json5", 0o644), ("var/lib/baton", 0o750),
            ("usr/share/doc/baton/examples/baton.json5", 0o644), ("usr/share/fish/vendor_completions.d/baton.fish", 0o644),
        ]
        for (path, mode) in modes {
            let attributes = try? FileManager.default.attributesOfItem(atPath: tree.root + "/" + path)
            #expect((attributes?[.posixPermissions] as? Int) == mode, "\(path)")
        }
        #expect(try await tree.chroot("getent group baton").code == 0, "postinst creates the group")
        #expect(!FileManager.default.fileExists(atPath: tree.root + "/etc/systemd/system/multi-user.target.wants/batond.service"),
                "nothing is enabled without being asked")
        let shipped = try await tree.chroot("batond --check-config /etc/baton/baton.json5")
        #expect(shipped.code == 0 && shipped.stdout.hasPrefix("/etc/baton/baton.json5: ok, no actions\n"), "\(shipped.stdout) \(shipped.stderr)")
        #expect(try await tree.chroot("batond --check-config /usr/share/doc/baton/examples/baton.json5").code == 0)
        // Issue 37, item 10: root runs the service, so an action must say whom it runs as.
        let unnamed = try await tree.chroot("""
            sed 's|^  actions: {|  actions: {\\n    deploy: { exec: ["true"] },\\n    hello: { exec: ["true"], user: "root" },|' \
                /etc/baton/baton.json5 > /tmp/edited.json5 && batond --check-config /tmp/edited.json5
            """)
        #expect(unnamed.code == 1 && unnamed.stderr.contains("/tmp/edited.json5: actions.deploy.user: missing, and requireUser is true")
                && !unnamed.stderr.contains("actions.hello"), "\(unnamed.stdout) \(unnamed.stderr)")

        // Remove: the files go, the edited config stays; purge: the config and the history go too.
        try "// edited\n" .appending(try String(contentsOfFile: tree.root + "/etc/baton/baton.json5", encoding: .utf8))
            .write(toFile: tree.root + "/etc/baton/baton.json5", atomically: true, encoding: .utf8)
        #expect(try await tree.chroot("dpkg -r baton").code == 0)
        #expect(!FileManager.default.fileExists(atPath: tree.root + "/usr/bin/batond"))
        #expect(FileManager.default.fileExists(atPath: tree.root + "/etc/baton/baton.json5"))
        #expect(try await tree.chroot("dpkg -P baton").code == 0)
        #expect(!FileManager.default.fileExists(atPath: tree.root + "/etc/baton/baton.json5"))
        #expect(!FileManager.default.fileExists(atPath: tree.root + "/var/lib/baton"))
        #expect(try await tree.chroot("dpkg -s baton").code != 0)
    }

    @Test("""
        under systemd, with the demo config in /etc: a trigger sent to batond.socket before batond runs is answered; READY and STATUS; the demo actions \
        work in the hardened unit; journalctl finds the transitions; reload applies a new config; a member of baton may \
        trigger and others may not; a batond stopped with SIGSTOP is restarted by the watchdog and recovers its run
        """)
    func realSystemd() async throws {
        let deb = try await Self.buildDeb()
        let container = try await Container.make()
        try FileManager.default.copyItem(atPath: deb, toPath: container.root + "/tmp/baton.deb")
        // Kept for an upgrade once booted (the booted /tmp is a tmpfs of its own).
        try FileManager.default.copyItem(atPath: deb, toPath: container.root + "/root/baton.deb")
        let setup = try await container.chroot("""
            dpkg -i /tmp/baton.deb && cp /usr/share/doc/baton/examples/baton.json5 /etc/baton/baton.json5 &&
            useradd -m alice && usermod -aG baton alice && useradd -m bob &&
            mkdir -p /etc/systemd/system/batond.service.d &&
            printf '[Service]\\nWatchdogSec=3s\\nTimeoutAbortSec=2s\\n' > /etc/systemd/system/batond.service.d/test.conf
            """)
        #expect(setup.code == 0, "\(setup.stderr)")
        try await container.boot()

        #expect(try await container.run("systemctl enable --now batond.socket").code == 0)
        #expect(try await container.run("systemctl is-active batond.service").stdout.hasPrefix("inactive"))
        let hello = try await container.run("baton run hello")
        #expect(hello.code == 0 && hello.stdout.contains("hello run 1 succeeded"), "\(hello.stdout) \(hello.stderr)")
        #expect(try await container.run("systemctl is-active batond.service").stdout.hasPrefix("active"))
        let status = try await container.run("systemctl show -p StatusText --value batond.service").stdout
        #expect(!status.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "STATUS= reaches systemd")

        for command in ["baton run disk-report", "baton run deploy -p env=prod", "baton run slow-build"] {
            let result = try await container.run(command)
            #expect(result.code == 0, "\(command): \(result.stdout) \(result.stderr)")
        }
        #expect(try await container.waitUntil("journalctl BATON_ACTION=hello -o cat --no-pager | grep -q 'loading → success'"))
        // Each line of a run's output is in the journal as the action's own message, with the run's fields.
        #expect(try await container.waitUntil("""
            journalctl BATON_ACTION=deploy BATON_STREAM=stdout BATON_KEY='deploy env=prod' PRIORITY=6 -o cat --no-pager | grep -qx 'deploying to prod'
            """))
        let steps = try await container.run("journalctl SYSLOG_IDENTIFIER=slow-build BATON_RUN_ID=4 -o cat --no-pager")
        #expect(steps.stdout == "step 1\nstep 2\nstep 3\nstep 4\nstep 5\n", "\(steps.stdout) \(steps.stderr)")
        // One field names the run in all its entries: its transitions, then its lines after its loading line.
        #expect(try await container.waitUntil("journalctl BATON_RUN_ID=4 -o cat --no-pager | grep -q 'loading → success'"))
        let runStory = try await container.run("journalctl BATON_RUN_ID=4 -o cat --no-pager").stdout.split(separator: "\n").map(String.init)
        let loading = runStory.firstIndex { $0.contains("queued → loading") } ?? runStory.count
        #expect(runStory.first?.contains("new → queued") == true && runStory.last?.contains("loading → success") == true, "\(runStory)")
        #expect(Array(runStory.dropFirst(loading + 1).dropLast()) == (1...5).map { "step \($0)" }, "\(runStory)")

        let added = try await container.run("""
            sed -i 's/^  actions: {/  actions: {\\n    extra: { exec: ["sh", "-c", "echo extra-err >\\&2"] },/' /etc/baton/baton.json5 && systemctl reload batond.service
            """)
        #expect(added.code == 0, "\(added.stderr)")
        #expect(try await container.run("baton actions --names").stdout.contains("extra"))
        #expect(try await container.run("baton run extra").code == 0)
        #expect(try await container.waitUntil("journalctl BATON_ACTION=extra BATON_STREAM=stderr PRIORITY=4 -o cat --no-pager | grep -qx extra-err"))

        #expect(try await container.run("runuser -u alice -- baton run hello").code == 0)
        let bob = try await container.run("runuser -u bob -- baton run hello")
        #expect(bob.code == 77 && bob.stderr.contains("group baton"), "\(bob.stderr)")

        let run = try await container.run("baton run slow-build --detach").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let pid = try await container.run("systemctl show -p MainPID --value batond.service").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // MainPID 0 (batond not running) would make `kill -STOP 0` stop the shell itself, and the suite hang.
        try #require(Int(pid).map { $0 > 1 } == true, "batond.service has no main process: \(pid)")
        #expect(try await container.run("kill -STOP \(pid)").code == 0)
        #expect(try await container.waitUntil("[ \"$(systemctl show -p NRestarts --value batond.service)\" -ge 1 ]", seconds: 60))
        #expect(try await container.waitUntil("systemctl is-active -q batond.service", seconds: 30))
        // KillMode=process: the watchdog's kill took batond alone; its run's shim lived on, and the
        // next batond adopted the run, which ends as it would have (issue 41).
        let adopted = try await container.waitUntil(#"baton show \#(run) --json | grep -Eq '"phase" ?: ?"success"'"#, seconds: 60)
        let story = try await container.run("baton show \(run) --json")
        #expect(adopted, "\(story.stdout) \(story.stderr)")
        #expect(try await container.run("baton run hello").code == 0)
        try await plannedRestarts(container)
        try await processTrees(container)
    }

    @Test("""
        under systemd: batond-webhooks.socket holds 127.0.0.1:9470 and the first POST to a hook starts batond through it; the \
        hook's action runs (its secret a LoadCredential=), show and history have the run; a bad token gets 401 and no run; \
        with the shipped config (no webhooks) the socket's requests get 404 instead of waiting for ever
        """)
    func webhookThroughSocketUnit() async throws {
        let deb = try await Self.buildDeb()
        let container = try await Container.make(privateNetwork: true)
        try FileManager.default.copyItem(atPath: deb, toPath: container.root + "/tmp/baton.deb")
        let setup = try await container.chroot("""
            dpkg -i /tmp/baton.deb && cp /etc/baton/baton.json5 /root/shipped.json5 &&
            install -d -m 0700 /etc/baton/hooks && (umask 077 && printf '\(Self.hookToken)\\n' > /etc/baton/hooks/gitlab.secret) &&
            mkdir -p /etc/systemd/system/batond.service.d &&
            printf '[Service]\\nLoadCredential=gitlab:/etc/baton/hooks/gitlab.secret\\n' > /etc/systemd/system/batond.service.d/hooks.conf &&
            cat > /etc/baton/baton.json5 <<'EOF'
            {
              webhooks: {
                listen: "127.0.0.1:9470",
                hooks: { "gitlab-deploy": { action: "deploy", signature: "gitlab", secret: { credential: "gitlab" }, params: { env: "/ref" } } },
              },
              actions: {
                deploy: { exec: ["sh", "-c", "echo deploying $BATON_PARAM_ENV"], params: { env: { pattern: "refs/heads/(main|release)" } } },
              },
            }
            EOF
            """)
        #expect(setup.code == 0, "\(setup.stderr)")
        try await container.boot()

        #expect(try await container.run("systemctl enable --now batond-webhooks.socket").code == 0)
        #expect(try await container.run("systemctl is-active batond.service").stdout.hasPrefix("inactive"))
        // batond cannot bind 9470 itself (systemd holds it): an answer means it took the passed socket.
        let pressed = try await Self.postHook(container, "/hooks/gitlab-deploy?wait=30s", token: Self.hookToken)
        #expect(pressed.status == 200, "\(pressed.body)")
        let answer = (try? JSONSerialization.jsonObject(with: Data(pressed.body.utf8))) as? [String: Any]
        let run = try #require(answer?["run"] as? Int, "\(pressed.body)")
        #expect(answer?["phase"] as? String == "success", "\(pressed.body)")
        #expect(try await container.run("systemctl is-active batond.service").stdout.hasPrefix("active"))
        let shown = try await container.run("baton show \(run)")
        for text in ["webhook gitlab-deploy from 127.0.0.1", "env=refs/heads/main", "success", "deploying refs/heads/main"] {
            #expect(shown.stdout.contains(text), "baton show lacks \(text): \(shown.stdout) \(shown.stderr)")
        }

        let refused = try await Self.postHook(container, "/hooks/gitlab-deploy", token: "not-" + Self.hookToken)
        #expect(refused.status == 401, "\(refused.body)")
        let history = try await container.run("baton history --action deploy --json")
        #expect(history.stdout.components(separatedBy: "\"id\"").count == 2, "one run, the good token's: \(history.stdout) \(history.stderr)")

        // The shipped config has no webhooks: the socket systemd passes is served all the same.
        #expect(try await container.run("cp /root/shipped.json5 /etc/baton/baton.json5 && systemctl stop batond.service").code == 0)
        #expect(try await container.run("systemctl is-active batond-webhooks.socket").stdout.hasPrefix("active"))
        let unknown = try await Self.postHook(container, "/hooks/gitlab-deploy", token: Self.hookToken)
        #expect(unknown.status == 404, "\(unknown.body)")
        #expect(try await container.waitUntil("journalctl -u batond.service -o cat --no-pager | grep -q 'the config has no webhooks: requests there get 404'"))
    }

    static let hookToken = "gl-0123456789abcdef-secret"

    /// POSTs a GitLab push to the container's 127.0.0.1:9470 with curl (at most 60 s): the status and the body.
    static func postHook(_ container: Container, _ path: String, token: String) async throws -> (status: Int, body: String) {
        let result = try await container.inNetwork("""
            curl -sS --max-time 60 -w '\\n%{http_code}' -H 'X-Gitlab-Token: \(token)' -H 'X-Gitlab-Event: Push Hook' -H 'Content-Type: application/json' \
                 --data-binary '{"ref":"refs/heads/main"}' 'http://127.0.0.1:9470\(path)'
            """)
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n") + result.stderr)
    }

    /// Issue 41: a run loading across `systemctl restart batond` (SIGTERM: handed to its shim,
    /// adopted by the next batond), `baton restart` (in place, same pid) and a `dpkg -i` of the
    /// package (its postinst restarts batond in place) succeeds each time.
    func plannedRestarts(_ container: Container) async throws {
        let inPlace = "journalctl -u batond.service -o cat --no-pager | grep -c 'restarting in place:'"
        for (index, restart) in ["systemctl restart batond.service", "baton restart", "dpkg -i /root/baton.deb"].enumerated() {
            let run = try await container.run("baton run slow-build --detach").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try await container.waitUntil(#"baton show \#(run) --json | grep -Eq '"phase" ?: ?"loading"'"#))
            let before = try await container.run("systemctl show -p MainPID --value batond.service").stdout
            let restarted = try await container.run(restart)
            #expect(restarted.code == 0, "\(restart): \(restarted.stdout) \(restarted.stderr)")
            let ended = try await container.waitUntil(#"baton show \#(run) --json | grep -Eq '"phase" ?: ?"success"'"#, seconds: 60)
            let story = try await container.run("baton show \(run)")
            #expect(ended, "\(restart): \(story.stdout) \(story.stderr)")
            let after = try await container.run("systemctl show -p MainPID --value batond.service").stdout
            if index > 0 {
                #expect(before == after, "\(restart) restarts in place: \(before) → \(after)")
                #expect(try await container.waitUntil("[ $(\(inPlace)) -eq \(index) ]"), "\(restart): batond said it restarted in place")
            }
            #expect(try await container.run("baton run hello").code == 0, "\(restart): batond serves after it")
        }
    }

    /// Under systemd (Delegate=yes): each attempt in a cgroup of its own under the service; a
    /// setsid child and a double fork are stopped by cancel, by timeout and by `systemctl stop`
    /// (for a run that does not survive restarts: one that does is handed to its shim and lives on).
    func processTrees(_ container: Container) async throws {
        let config = try await container.run("""
            cat > /etc/baton/baton.json5 <<'EOF'
            { actions: { esc: { exec: ["sh", "-c", "setsid sleep 997 & (sh -c 'sleep 996 &' &); echo started; sleep 30"],
                                timeout: "2s", killGrace: "200ms", survivesRestart: false } } }
            EOF
            systemctl reload batond.service
            """)
        #expect(config.code == 0, "\(config.stderr)")
        let status = try await container.run("baton status").stdout
        #expect(status.contains("processes: a cgroup per attempt under /sys/fs/cgroup/") && status.contains("/system.slice/batond.service/baton-"),
                "\(status)")
        // The sleeps of the run and their cgroups, read from /proc (minbase has no pgrep).
        let alive = #"for p in /proc/[0-9]*; do c=$(tr "\0" " " < $p/cmdline 2>/dev/null); case "$c" in "sleep 99"*) echo "$c $(grep ^0:: $p/cgroup)";; esac; done"#
        #expect(try await container.run("baton run esc --detach").code == 0)
        #expect(try await container.waitUntil("[ $(\(alive) | grep -c /run-) -eq 2 ]"))
        #expect(try await container.run(alive).stdout.contains("/system.slice/batond.service/baton-"))
        #expect(try await container.run("baton cancel esc").code == 0)
        #expect(try await container.run(alive).stdout.isEmpty, "cancel")
        #expect(try await container.run("baton run esc").code != 0)
        #expect(try await container.run(alive).stdout.isEmpty, "timeout")
        #expect(try await container.run("baton run esc --detach").code == 0)
        #expect(try await container.waitUntil("[ $(\(alive) | grep -c /run-) -eq 2 ]"))
        #expect(try await container.run("systemctl stop batond.service").code == 0)
        #expect(try await container.run(alive).stdout.isEmpty, "systemctl stop")
    }
}
