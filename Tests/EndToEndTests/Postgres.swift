import CBatonSystem
import BatonFleet
import Foundation

/// A real PostgreSQL server from Debian's packages for the fleet tests: `initdb` and `pg_ctl`
/// run as the `postgres` user in a temporary directory, listening on a Unix socket there (and
/// on TCP at `tcpAddress`, when the partition test asks for it). One server per test process,
/// started on first use and stopped at exit; a fresh database per test.
final class Postgres: @unchecked Sendable {
    let directory: String
    private(set) var port: Int
    private static let lock = NSLock()
    nonisolated(unsafe) private static var shared: Postgres?
    nonisolated(unsafe) private static var stopCommand: [String] = []
    nonisolated(unsafe) private static var sharedDirectory = ""
    nonisolated(unsafe) static var swept = false

    /// The server, started if need be (about 1.5 s).
    static func server() throws -> Postgres {
        lock.lock()
        defer { lock.unlock() }
        if let shared { return shared }
        sweepLeftovers()
        let server = try Postgres()
        shared = server
        sharedDirectory = server.directory
        stopCommand = [server.bin("pg_ctl"), "-D", server.directory + "/data", "-m", "immediate", "stop"]
        atexit {
            guard !Postgres.stopCommand.isEmpty else { return }
            _ = Postgres.shell("/usr/sbin/runuser -u postgres -- " + Postgres.stopCommand.joined(separator: " ") + " > /dev/null 2>&1")
            try? FileManager.default.removeItem(atPath: Postgres.sharedDirectory)
        }
        return server
    }

    /// A server of the caller's own, for a test that stops and starts it (the shared one serves
    /// suites that run meanwhile); stopped when released.
    static func own() throws -> Postgres {
        lock.withLock { sweepLeftovers() }
        let server = try Postgres()
        server.owned = true
        return server
    }

    private var owned = false

    deinit {
        if owned {
            try? stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    private init() throws {
        directory = NSTemporaryDirectory() + "baton-pg-" + UUID().uuidString.prefix(8)
        port = Self.randomPort()
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(PostgresLeftovers.ownerLine().utf8).write(to: URL(fileURLWithPath: directory + "/" + PostgresLeftovers.ownerFile))
        _ = try execute("/bin/chown", ["postgres:postgres", directory])
        let made = try execute("/usr/sbin/runuser", ["-u", "postgres", "--", bin("initdb"), "-D", directory + "/data", "-U", "baton",
                                                     "-A", "trust", "--no-sync"])
        guard made.code == 0 else { throw PostgresError.failed("initdb: \(made.stderr)") }
        // TCP only from the partition test's own network namespaces (10.231.0.0/16), nowhere else.
        let hba = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/pg_hba.conf"))
        hba.seekToEndOfFile()
        hba.write(Data("host all baton 10.231.0.0/16 trust\n".utf8))
        try hba.close()
        // Another listener may hold the port (a test's dashboard, another server): a new one, a few times.
        for attempt in 1...8 {
            do {
                try start()
                break
            } catch where attempt < 8 && log.contains("Address already in use") {
                port = Self.randomPort()
            }
        }
    }

    /// A port for the server's TCP listener, below the kernel's ephemeral range, where no client's
    /// connection holds one (CI's local run of session 32: 36416, inside 32768-60999, was in use and
    /// the server would not start).
    static func randomPort() -> Int {
        let range = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let ephemeral = range.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } ?? 32_768
        return Int.random(in: 20_000..<max(ephemeral, 20_001))
    }

    /// The server's log so far.
    var log: String { (try? String(contentsOfFile: directory + "/log", encoding: .utf8)) ?? "" }

    /// Starts the server (again, after `stop`).
    func start() throws {
        // The server must not inherit our output pipes (we would wait for their end forever): the
        // shell sends pg_ctl's output, and so the server's, to a file.
        let options = "-p \(port) -k \(directory) -c listen_addresses=0.0.0.0 -c fsync=off -c max_connections=300"
        let command = "exec /usr/sbin/runuser -u postgres -- \(bin("pg_ctl")) -D \(directory)/data -w -l \(directory)/log -o '\(options)' start"
            + " > \(directory)/pg_ctl.out 2>&1 < /dev/null"
        guard Self.shell(command) == 0 else {
            throw PostgresError.failed("pg_ctl start: \((try? String(contentsOfFile: directory + "/pg_ctl.out", encoding: .utf8)) ?? "")")
        }
    }

    /// Stops the server at once (connections are cut, as when a database host goes away).
    func stop() throws {
        _ = Self.shell("/usr/sbin/runuser -u postgres -- \(bin("pg_ctl")) -D \(directory)/data -m immediate -w stop > /dev/null 2>&1")
    }

    /// Runs a shell command with posix_spawn and waits for it with waitpid. (Foundation's Process
    /// was seen to miss the exit of `runuser … pg_ctl start`, leaving it a zombie and the wait hanging.)
    /// Every descriptor but stdin, stdout and stderr is closed in the child (`baton_spawn`): the
    /// server outlives the test, and a pipe or socket of this process that it inherited — another
    /// test's batond's output, or the socket by which Foundation learns that a Process exited —
    /// would never reach its end. A server started beside a batond kept that batond's exit
    /// unnoticed, and `Daemon.stop` waited for it forever.
    static func shell(_ command: String) -> Int32 {
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = ["/bin/sh", "-c", command].map { (text: String) in strdup(text) } + [nil]
        defer { argv.forEach { free($0) } }
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        let spawned = argv.withUnsafeBufferPointer { args in
            args.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: args.count) { argv in
                environ.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: 1) { envp in
                    baton_spawn(argv, envp, nil, null, null, -1, &pid)
                }
            }
        }
        guard spawned == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            if errno != EINTR { return 0 }  // reaped by someone else: the output file tells what happened
        }
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    func bin(_ tool: String) -> String { Self.bin(tool) }

    static func bin(_ tool: String) -> String {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        let newest = versions.compactMap { Int($0) }.max() ?? 15
        return "/usr/lib/postgresql/\(newest)/bin/\(tool)"
    }

    /// A new, empty database; returns its connection string (over the Unix socket). `options`
    /// follow `CREATE DATABASE name` (an encoding and a locale, say).
    func database(_ options: String = "") throws -> String {
        let name = "t_" + UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: "")
        // Bounded and tried again: a clean-clone CI run here once sat 22 minutes in this connect
        // (libpq polling with no timeout, its socket's fd later found to be no socket), which
        // would have held CI to its limit; a test that cannot get its database fails instead.
        let conninfo = "host=\(directory) port=\(port) dbname=postgres user=baton"
        let bounded = ["connect_timeout": "20"]
        let admin = (try? PGConnection(conninfo, defaults: bounded)) ?? (try? PGConnection(conninfo, defaults: bounded))
        try (admin ?? PGConnection(conninfo, defaults: bounded)).execute("CREATE DATABASE \(name) \(options)")
        return "host=\(directory) port=\(port) dbname=\(name) user=baton"
    }

    enum PostgresError: Error { case failed(String) }
}
