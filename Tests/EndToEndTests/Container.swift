import BatonCore
import CBatonSystem
import Foundation
import Testing

/// A Debian tree booted under a real systemd with `systemd-nspawn`, driven from outside with
/// `nsenter`. The pristine tree (debootstrap: minbase, systemd, dbus, libsqlite3-0, libpq5) is made
/// once and kept under `.build/nspawn/base-pq`; each container boots a fresh copy of it. Its
/// methods do their blocking work off Swift's cooperative pool (`onThread`); one test drives it.
final class Container: @unchecked Sendable {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL.path
    static let cache = repository + "/.build/nspawn"
    static let base = cache + "/base-pq"
    private static let baseLock = NSLock()

    let root: String
    /// nspawn's output (the container's console), beside the tree.
    var consoleLog: String { root + ".console" }
    /// Whether it has a network namespace of its own (loopback only), where its ports are its own.
    let privateNetwork: Bool
    private var nspawn: Process?
    /// Its own cgroups (`baton-container-UUID`, one in each hierarchy systemd uses), which nspawn
    /// is started in. With `--keep-unit` nspawn roots the container's tree in the cgroup it was
    /// started in: two containers started from the same one shared `payload/system.slice/…`, and
    /// one container's batond.service stopping removed the other's runs' cgroups (CI run ci28b).
    private let cgroups: [String]
    /// The container's PID 1 (its systemd), as the host sees it.
    private(set) var initPID: Int32 = 0

    /// Debootstraps the base tree unless it is there (about a minute, from Debian's mirror).
    static func ensureBase() throws {
        // One at a time: a second suite's container found no `.complete` while the first one's
        // debootstrap ran, removed its tree and began again (CI run ci29d: a boot then failed).
        baseLock.lock()
        defer { baseLock.unlock() }
        if FileManager.default.fileExists(atPath: base + "/.complete") { return }
        try? FileManager.default.removeItem(atPath: base)
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        let mirror = "http://deb.debian.org/debian"
        let made = try execute("/usr/sbin/debootstrap", ["--variant=minbase", "--include=systemd,systemd-sysv,dbus,libsqlite3-0,libpq5",
                                                         "bookworm", base, mirror], within: buildLimit)
        guard made.code == 0 else { throw ContainerError.failed("debootstrap: \(made.stderr.suffix(2_000))") }
        _ = FileManager.default.createFile(atPath: base + "/.complete", contents: nil)
    }

    /// A fresh copy of the base tree (debootstrapped first if need be); with `privateNetwork`, it
    /// boots with a loopback of its own (the host's other listeners and its ports stay apart).
    static func make(privateNetwork: Bool = false) async throws -> Container {
        try await onThread { try Container(privateNetwork: privateNetwork) }
    }

    private init(privateNetwork: Bool) throws {
        try Self.ensureBase()
        self.privateNetwork = privateNetwork
        let name = UUID().uuidString
        root = Self.cache + "/run-" + name
        cgroups = Self.systemdHierarchies().map { $0 + "/baton-container-" + name }
        let copy = try execute("/bin/cp", ["-a", Self.base, root])
        guard copy.code == 0 else { throw ContainerError.failed("cp: \(copy.stderr)") }
    }

    /// Runs a command in the tree before it boots: chroot, with /proc mounted in a mount namespace
    /// of its own (Swift reads its arguments from /proc/self/cmdline), for at most two minutes.
    func chroot(_ command: String) async throws -> Output {
        try await EndToEndTests.run("/usr/bin/unshare", ["--mount", "--propagation", "private", "--fork", "/bin/sh", "-c",
                                         "mount -t proc proc \"$0/proc\" && exec timeout 120 chroot \"$0\" /bin/sh -c \"$1\"", root, command])
    }

    /// Boots it and waits until systemd says the system is up; where it does not come up, or its
    /// nspawn exits first, the error says what nspawn printed, what systemd was doing and what the
    /// host had left (CI run of stop 56: one boot never came up within 90 s, with nothing to say why).
    func boot() async throws {
        try await onThread { try self.start() }
        // systemctl cannot connect until PID 1 has set up its socket: ask again until it answers.
        // Each ask is bounded (`is-system-running --wait` waits for the boot's end), and a gone nspawn ends the wait.
        let deadline = ContinuousClock.now + .seconds(90)
        var up = false
        while !up, ContinuousClock.now < deadline, nspawn?.isRunning == true {
            up = try await run("timeout 10 systemctl is-system-running --wait | grep -qE '^(running|degraded)$'", within: 15).code == 0
            if !up { try? await Task.sleep(for: .milliseconds(200)) }
        }
        guard up else { throw ContainerError.failed("boot: \(try await diagnosis())") }
    }

    /// What a boot that did not come up left to read: nspawn's state and output, systemd's jobs, the
    /// journal's end, and the host's inotify instances (each systemd, dbus and logind needs its own).
    func diagnosis() async throws -> String {
        let console = (try? String(contentsOfFile: consoleLog, encoding: .utf8)) ?? ""
        let running = nspawn?.isRunning == true
        let inside = running ? try await run("""
            systemctl is-system-running; systemctl list-jobs --no-pager; systemctl --failed --no-legend; \
            ps -eo pid,stat,comm; journalctl -b --no-pager | tail -40
            """, within: 30).stdout : ""
        let inotify = (try? execute("/bin/sh", ["-c", "find /proc/[0-9]*/fd -lname 'anon_inode:inotify' 2>/dev/null | wc -l"]).stdout) ?? "?"
        let limit = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_user_instances", encoding: .utf8)) ?? "?"
        return "nspawn \(running ? "running" : "exited"); host inotify instances \(inotify.trimmingCharacters(in: .whitespacesAndNewlines)) of \(limit.trimmingCharacters(in: .whitespacesAndNewlines))\n"
            + "console (end):\n\(console.suffix(3_000))\ninside:\n\(inside)"
    }

    private func start() throws {
        for cgroup in cgroups where mkdir(cgroup, 0o755) != 0 {
            throw ContainerError.failed("cannot create \(cgroup): \(String(cString: strerror(errno)))")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // --register=no and --keep-unit: the host has no systemd to register with or to ask for a
        // scope; the shell moves itself into the container's own cgroups, then execs nspawn.
        let arguments = ["--boot", "--register=no", "--keep-unit", "--quiet"] + (privateNetwork ? ["--private-network"] : []) + ["-D", root]
        let moves = cgroups.map { "echo $$ > '\($0)/cgroup.procs' && " }.joined()
        process.arguments = ["-c", moves + "exec /usr/bin/systemd-nspawn \"$@\"", "nspawn"] + arguments
        process.standardInput = FileHandle.nullDevice
        // Its console (systemd's boot messages, PID 1's last words) in a file beside the tree, for `diagnosis`.
        guard FileManager.default.createFile(atPath: consoleLog, contents: nil), let console = FileHandle(forWritingAtPath: consoleLog) else {
            throw ContainerError.failed("cannot create \(consoleLog)")
        }
        process.standardOutput = console
        process.standardError = console
        try process.run()
        nspawn = process
        Eventually.until("the container's systemd (a child of nspawn named systemd*)", within: 60) {
            let children = (try? execute("/usr/bin/pgrep", ["-P", String(process.processIdentifier)]).stdout) ?? ""
            if let pid = children.split(separator: "\n").compactMap({ Int32($0) }).first,
               (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.hasPrefix("systemd") == true {
                initPID = pid
            }
            return initPID != 0 || !process.isRunning
        }
        guard initPID != 0 else { throw ContainerError.failed("the container's systemd never appeared") }
    }

    /// Runs a shell command inside the booted container, as root.
    @discardableResult
    func run(_ command: String, within seconds: Double = 180) async throws -> Output {
        try await EndToEndTests.run("/usr/bin/nsenter", ["-t", String(initPID), "-a", "/bin/sh", "-c", command], within: seconds)
    }

    /// Runs a shell command of the host's (curl, python3: the base tree has neither) in the
    /// container's network namespace only: its 127.0.0.1 is the container's.
    func inNetwork(_ command: String) async throws -> Output {
        try await EndToEndTests.run("/usr/bin/nsenter", ["-t", String(initPID), "-n", "/bin/sh", "-c", command])
    }

    /// Waits until `command` succeeds inside, or `seconds` pass (an issue naming it then).
    func waitUntil(_ command: String, seconds: Double = 30) async throws -> Bool {
        try await Eventually.untilAwaited("`\(command)` succeeds in the container", within: seconds) { try await run(command).code == 0 }
    }

    func shutdown() {
        guard let nspawn, nspawn.isRunning else { return }
        _ = try? execute("/usr/bin/nsenter", ["-t", String(initPID), "-a", "systemctl", "poweroff"])
        // Up to 30 s for nspawn to exit (its pidfd turns readable), then killed.
        let exited = baton_pidfd_open(nspawn.processIdentifier)
        if exited >= 0 {
            var ready = pollfd(fd: exited, events: Int16(POLLIN), revents: 0)
            while poll(&ready, 1, 30_000) < 0 && errno == EINTR {}
            close(exited)
        }
        if nspawn.isRunning { kill(nspawn.processIdentifier, SIGKILL); nspawn.waitUntilExit() }
    }

    /// Kills every process in `cgroup` and below, and waits (at most 10 s) for its `cgroup.events`
    /// to say none is left.
    private func killAll(_ cgroup: String) {
        let events = open(cgroup + "/cgroup.events", O_RDONLY | O_CLOEXEC)
        defer { if events >= 0 { close(events) } }
        guard (try? "1".write(toFile: cgroup + "/cgroup.kill", atomically: false, encoding: .utf8)) != nil, events >= 0 else { return }
        let deadline = ContinuousClock.now + .seconds(10)
        var buffer = [UInt8](repeating: 0, count: 256)
        while ContinuousClock.now < deadline {
            let count = pread(events, &buffer, buffer.count, 0)
            if count > 0, String(decoding: buffer[..<count], as: UTF8.self).contains("populated 0") { return }
            var ready = pollfd(fd: events, events: Int16(POLLPRI), revents: 0)
            _ = poll(&ready, 1, 1_000)
        }
    }

    deinit {
        shutdown()
        // A killed nspawn leaves its container's processes (a boot stuck with journald and dbus up
        // outlived two CI runs' tests): its cgroup's kill ends them all, and then its tree can go.
        if let own = cgroups.first, FileManager.default.fileExists(atPath: own + "/cgroup.kill") { killAll(own) }
        for cgroup in cgroups { Self.removeTree(cgroup) }
        try? FileManager.default.removeItem(atPath: root)
        try? FileManager.default.removeItem(atPath: consoleLog)
    }

    /// The cgroup2 mount (as batond finds it) and, on a hybrid host, the v1 `name=systemd` one.
    static func systemdHierarchies() -> [String] {
        let mountinfo = (try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8)) ?? ""
        let named = mountinfo.split(separator: "\n").first { line in
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash + 3 < fields.count, fields[dash + 1] == "cgroup" else { return false }
            return fields[dash + 3].split(separator: ",").contains("name=systemd")
        }.map { String($0.split(separator: " ")[4]) }
        return [CgroupHierarchy.mountPoint(mountinfo: mountinfo), named].compactMap { $0 }
    }

    /// Removes a cgroup and the cgroups the container left under it (its directories; the files are
    /// the kernel's), deepest first: each is empty once the container is down.
    static func removeTree(_ path: String) {
        let children = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        for child in children {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path + "/" + child, isDirectory: &isDirectory), isDirectory.boolValue {
                removeTree(path + "/" + child)
            }
        }
        rmdir(path)
    }
}

enum ContainerError: Error, CustomStringConvertible {
    case failed(String)
    var description: String { if case let .failed(text) = self { text } else { "" } }
}
