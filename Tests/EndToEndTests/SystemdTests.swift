import BatonCore
import BatonIPC
import Foundation
import Testing

/// A Unix datagram socket that stands in for systemd's NOTIFY_SOCKET or journald's native socket.
final class DatagramSink {
    let path: String
    private let fd: Int32

    init(_ path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in path.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next datagram, or nil after 10 s.
    func receive() -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? Array(buffer[..<n]) : nil
    }

    /// Datagrams until one contains `text` (returned), or nil after a 10 s silence.
    func until(_ text: String) -> String? {
        while let datagram = receive() {
            let message = String(decoding: datagram, as: UTF8.self)
            if message.contains(text) { return message }
        }
        return nil
    }
}

@Suite("End to end: systemd", .serialized, .offPool)
struct SystemdTests {
    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardizedFileURL
    }

    static var unitDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../systemd").standardizedFileURL
    }

    @Test("the service and socket units pass systemd-analyze verify")
    func unitsVerify() throws {
        let directory = NSTemporaryDirectory() + "baton-units-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for unit in ["batond.service", "batond.socket", "batond-webhooks.socket"] {
            let text = try String(contentsOf: Self.unitDirectory.appendingPathComponent(unit), encoding: .utf8)
                .replacingOccurrences(of: "/usr/local/bin/batond", with: Binaries.batond)
                .replacingOccurrences(of: "/usr/local/bin/baton ", with: Binaries.baton + " ")
            try text.write(toFile: directory + "/" + unit, atomically: true, encoding: .utf8)
        }
        // The units' Documentation= names the man pages: verify finds them in the repo's sources.
        let manRoot = directory + "/man"
        for (page, section) in [("baton.1", "1"), ("batond.8", "8"), ("baton.json5.5", "5")] {
            try FileManager.default.createDirectory(atPath: manRoot + "/man" + section, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: Self.repository.appendingPathComponent("docs/man/" + page).path,
                                            toPath: manRoot + "/man\(section)/" + page)
        }
        let result = try execute("/usr/bin/systemd-analyze", ["verify", directory + "/batond.service", directory + "/batond.socket",
                                                               directory + "/batond-webhooks.socket"],
                                 environment: ["MANPATH": manRoot])
        #expect(result.code == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("batond."), "\(result.stderr)")
        let service = try String(contentsOf: Self.unitDirectory.appendingPathComponent("batond.service"), encoding: .utf8)
        for line in ["Type=notify", "WatchdogSec=", "ExecReload=/usr/local/bin/baton reload\n", "StateDirectory=baton", "RuntimeDirectory=baton",
                     // /run/baton kept across a stop and a restart (the socket batond.socket listens on): a guard, the unit had it already.
                     "RuntimeDirectoryPreserve=yes\n",
                     "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes"] {
            #expect(service.contains(line), "batond.service lacks \(line)")
        }
        let socket = try String(contentsOf: Self.unitDirectory.appendingPathComponent("batond.socket"), encoding: .utf8)
        for line in ["ListenStream=/run/baton/baton.sock", "SocketMode=0660", "SocketGroup=baton"] {
            #expect(socket.contains(line), "batond.socket lacks \(line)")
        }
    }

    @Test("sysusers.d creates the baton group; tmpfiles.d creates batond's directories")
    func sysusersAndTmpfiles() throws {
        let root = NSTemporaryDirectory() + "baton-root-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root + "/etc", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let users = try execute("/usr/bin/systemd-sysusers", ["--root=" + root, Self.unitDirectory.appendingPathComponent("baton.sysusers").path])
        #expect(users.code == 0, "\(users.stderr)")
        #expect(try String(contentsOfFile: root + "/etc/group", encoding: .utf8).contains("baton:x:"))
        let files = try execute("/usr/bin/systemd-tmpfiles", ["--create", "--root=" + root, Self.unitDirectory.appendingPathComponent("baton.tmpfiles").path])
        #expect(files.code == 0, "\(files.stderr)")
        let state = try FileManager.default.attributesOfItem(atPath: root + "/var/lib/baton")
        #expect((state[.posixPermissions] as? Int) == 0o750)
        #expect(FileManager.default.fileExists(atPath: root + "/run/baton"))
    }

    @Test("notify: READY=1 once listening, STATUS=, RELOADING=1 with MONOTONIC_USEC then READY=1, WATCHDOG=1, STOPPING=1; journal fields per transition")
    func notifyWatchdogJournal() throws {
        let directory = NSTemporaryDirectory() + "baton-notify-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let notify = try DatagramSink(directory + "/notify")
        let journal = try DatagramSink(directory + "/journal")
        let config = directory + "/baton.json5"
        try #"{ actions: { hello: { exec: ["true"] } } }"#.write(toFile: config, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: Binaries.batond)
        process.arguments = ["--config", config, "--socket", directory + "/baton.sock", "--database", directory + "/history.sqlite"]
        let stderr = Pipe()
        // JOURNAL_STREAM names stderr's device and inode, as systemd sets it when stderr is the journal.
        var info = stat()
        fstat(stderr.fileHandleForWriting.fileDescriptor, &info)
        process.environment = ProcessInfo.processInfo.environment.merging([
            "NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000", "JOURNAL_STREAM": "\(info.st_dev):\(info.st_ino)",
            "BATON_JOURNAL_SOCKET": journal.path,
        ]) { $1 }
        process.standardError = stderr
        try process.run()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }

        // The watchdog is pinged while batond starts (a long migration, a restart in place's new image), before READY=1.
        var starting: [String] = []
        var readied: String?
        while readied == nil, let datagram = notify.receive() {
            let message = String(decoding: datagram, as: UTF8.self)
            if message.contains("READY=1") { readied = message } else { starting.append(message) }
        }
        #expect(starting.contains { $0.contains("WATCHDOG=1") }, "a WATCHDOG=1 before READY=1: \(starting)")
        let ready = try #require(readied)
        #expect(ready.contains("STATUS=idle"))
        // Ready means listening: a request is answered at once.
        #expect(try Client(path: directory + "/baton.sock").call(Request(op: .ping)).ok == true)
        #expect(notify.until("WATCHDOG=1") != nil)

        #expect(try execute(Binaries.baton, ["--socket", directory + "/baton.sock", "run", "hello"]).code == 0)
        let entry = try #require(journal.until("BATON_PHASE=success"))
        for field in ["BATON_ACTION=hello", "BATON_RUN_ID=1", "BATON_RUN=1", "PRIORITY=6", "SYSLOG_IDENTIFIER=batond", "BATON_KEY=hello"] {
            #expect(entry.contains(field + "\n"), "\(entry)")
        }
        #expect(entry.contains("MESSAGE=run 1 hello: loading → success"), "\(entry)")

        kill(process.processIdentifier, SIGHUP)
        let reloading = try #require(notify.until("RELOADING=1"))
        let monotonic = reloading.split(separator: "\n").first { $0.hasPrefix("MONOTONIC_USEC=") }
        #expect(monotonic.flatMap { Int64($0.dropFirst("MONOTONIC_USEC=".count)) }.map { $0 > 0 } == true)
        #expect(notify.until("READY=1") != nil)

        kill(process.processIdentifier, SIGTERM)
        #expect(notify.until("STOPPING=1") != nil)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let log = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        // Plain log lines carry syslog priorities; transitions went to the journal with their fields instead.
        #expect(log.contains("<6>batond \(BatonVersion.current) ready"), "\(log)")
        #expect(!log.contains("hello: loading → success"))
    }

    @Test("socket activation: a trigger sent before batond runs waits in the kernel's queue and is answered")
    func socketActivation() throws {
        let directory = NSTemporaryDirectory() + "baton-activate-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/baton.json5"
        try #"{ actions: { hello: { exec: ["sh", "-c", "echo activated"] } } }"#.write(toFile: config, atomically: true, encoding: .utf8)
        let socket = directory + "/baton.sock"
        let activator = try Self.activate(["-l", socket, Binaries.batond, "--config", config, "--database", directory + "/history.sqlite"])
        let client = try Client(path: socket)
        let answer = try client.call(Request(op: .trigger, action: "hello"))
        #expect(answer.ok == true, "\(String(describing: answer.error))")
        #expect(answer.run?.phase == .success)
        // batond took the passed socket: it is the same path, still there, and serves others too.
        #expect(try Client(path: socket).call(Request(op: .ping)).ok == true)
        activator.stop()
    }

    /// systemd-socket-activate with `arguments`, once it says it listens (batond is not started
    /// until a connection comes). Spawned, not Foundation's Process: Process learns that a child
    /// ended when a socket the child inherits closes, and systemd-socket-activate closes every
    /// descriptor it inherits, so Process's one monitoring thread waits in waitpid for it at once,
    /// and no other Process (curl) is seen to end until it does: the test hung.
    static func activate(_ arguments: [String]) throws -> Spawned {
        let activator = try Spawned(["/usr/bin/systemd-socket-activate"] + arguments)
        let said = activator.readStderr { $0.contains("Listening on") }
        guard said.contains("Listening on") else { throw ContainerError.failed("systemd-socket-activate: \(said)") }
        return activator
    }

    @Test("socket activation: a webhooks socket passed to a batond whose config has no webhooks is served (404, not left holding requests); a reload adds hooks there")
    func passedWebhooksWithoutHooks() throws {
        let directory = NSTemporaryDirectory() + "baton-activate-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/baton.json5"
        try #"{ actions: { hello: { exec: ["true"] } } }"#.write(toFile: config, atomically: true, encoding: .utf8)
        let address = "127.0.0.1:\(try MetricsEndToEndTests.freePort())"
        let activator = try Self.activate(["-l", address, "--fdname=webhooks", Binaries.batond, "--config", config,
                                           "--socket", directory + "/baton.sock", "--database", directory + "/history.sqlite"])
        // Unserved, the request would wait in the socket's queue until curl gives up (status 000).
        let posted = try execute("/usr/bin/curl", ["-sS", "--max-time", "30", "-o", "/dev/null", "-w", "%{http_code}",
                                                   "--data-binary", "{}", "http://\(address)/hooks/deploy"])
        #expect(posted.stdout == "404", "\(posted.stdout) \(posted.stderr)")
        #expect(activator.readStderr { $0.contains("the config has no webhooks: requests there get 404") }.contains("no webhooks"))

        // A reload that adds hooks serves them on the passed socket (its `listen` only documents it).
        let secret = directory + "/gl.secret"
        FileManager.default.createFile(atPath: secret, contents: Data("gl-token-0123456789abcdef\n".utf8), attributes: [.posixPermissions: 0o600])
        try """
            { webhooks: { listen: "127.0.0.1:9", hooks: { gl: { action: "hello", signature: "gitlab", secret: { file: "\(secret)" } } } },
              actions: { hello: { exec: ["true"] } } }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        kill(activator.pid, SIGHUP)
        let reloaded = activator.readStderr { $0.contains("reloaded ") || $0.contains("reload refused") }
        #expect(reloaded.contains("reloaded ") && !reloaded.contains("webhooks.listen changes only at restart"), "\(reloaded)")
        let pressed = try execute("/usr/bin/curl", ["-sS", "--max-time", "30", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Gitlab-Token: gl-token-0123456789abcdef",
                                                    "-H", "X-Gitlab-Event: Push Hook", "--data-binary", "{}", "http://\(address)/hooks/gl?wait=10s"])
        #expect(pressed.stdout == "200", "\(pressed.stdout) \(pressed.stderr)")
        activator.stop()
    }

    @Test("make install-files with DESTDIR and PREFIX gives a tree a packager would accept")
    func destdirInstall() throws {
        let stage = NSTemporaryDirectory() + "baton-stage-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: stage) }
        let make = try execute("/usr/bin/make", ["-C", Self.repository.path, "install-files", "BUILD_DIR=" + Binaries.directory.path,
                                                 "DESTDIR=" + stage, "PREFIX=/usr"])
        #expect(make.code == 0, "\(make.stderr)")
        let expected: [(String, Int)] = [
            ("usr/bin/batond", 0o755), ("usr/bin/baton", 0o755),
            ("usr/lib/systemd/system/batond.service", 0o644), ("usr/lib/systemd/system/batond.socket", 0o644),
            ("usr/lib/systemd/system/batond-webhooks.socket", 0o644),
            ("usr/lib/sysusers.d/baton.conf", 0o644), ("usr/lib/tmpfiles.d/baton.conf", 0o644),
            ("usr/share/man/man1/baton.1.gz", 0o644), ("usr/share/man/man5/baton.json5.5.gz", 0o644),
            ("usr/share/man/man8/batond.8.gz", 0o644), ("usr/share/bash-completion/completions/baton", 0o644),
            ("usr/share/zsh/site-functions/_baton", 0o644), ("usr/share/doc/baton/README.md", 0o644),
            ("usr/share/fish/vendor_completions.d/baton.fish", 0o644), ("usr/share/doc/baton/examples/baton.json5", 0o644),
            ("etc/baton/baton.json5", 0o644),
        ]
        for (path, mode) in expected {
            let attributes = try? FileManager.default.attributesOfItem(atPath: stage + "/" + path)
            #expect((attributes?[.posixPermissions] as? Int) == mode, "\(path)")
        }
        // Nothing outside PREFIX and /etc.
        let top = try FileManager.default.contentsOfDirectory(atPath: stage).sorted()
        #expect(top == ["etc", "usr"])

        // The unit runs the installed batond with the installed config; it verifies against the tree.
        let service = try String(contentsOfFile: stage + "/usr/lib/systemd/system/batond.service", encoding: .utf8)
        #expect(service.contains("ExecStart=/usr/bin/batond --config /etc/baton/baton.json5") && service.contains("ExecReload=/usr/bin/baton reload\n"))
        let units = stage + "/verify"
        try FileManager.default.createDirectory(atPath: units, withIntermediateDirectories: true)
        try service.replacingOccurrences(of: "=/usr/bin/", with: "=" + stage + "/usr/bin/")
            .write(toFile: units + "/batond.service", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: stage + "/usr/lib/systemd/system/batond.socket", toPath: units + "/batond.socket")
        let verify = try execute("/usr/bin/systemd-analyze", ["verify", units + "/batond.service", units + "/batond.socket"],
                                 environment: ["MANPATH": stage + "/usr/share/man"])
        #expect(verify.code == 0, "\(verify.stderr)")

        // Man pages render without warnings; the installed config is valid; completions parse.
        for page in ["man1/baton.1.gz", "man5/baton.json5.5.gz", "man8/batond.8.gz"] {
            let man = try execute("/usr/bin/man", ["--warnings", "-l", stage + "/usr/share/man/" + page], environment: ["MANWIDTH": "80"])
            #expect(man.code == 0 && man.stderr.isEmpty, "\(page): \(man.stderr)")
            #expect(man.stdout.contains("NAME"))
        }
        #expect(try execute(stage + "/usr/bin/batond", ["--check-config", stage + "/etc/baton/baton.json5"]).code == 0)
        #expect(try execute("/bin/bash", ["-n", stage + "/usr/share/bash-completion/completions/baton"]).code == 0)
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/fish") {
            #expect(try execute("/usr/bin/fish", ["--no-execute", stage + "/usr/share/fish/vendor_completions.d/baton.fish"]).code == 0)
        }

        // A second install never overwrites a local config.
        try "// mine\n{ actions: { a: { exec: [\"true\"] } } }".write(toFile: stage + "/etc/baton/baton.json5", atomically: true, encoding: .utf8)
        #expect(try execute("/usr/bin/make", ["-C", Self.repository.path, "install-files", "BUILD_DIR=" + Binaries.directory.path,
                                              "DESTDIR=" + stage, "PREFIX=/usr"]).code == 0)
        #expect(try String(contentsOfFile: stage + "/etc/baton/baton.json5", encoding: .utf8).hasPrefix("// mine"))
    }
}
