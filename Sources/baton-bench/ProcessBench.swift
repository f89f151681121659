import BatonIPC
import Foundation

/// 8 and 9: a real batond process: its memory with many waiting clients, and the CLI's start-up.
enum ProcessBench {
    static var binaries: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// Starts the real batond next to this binary on a scratch socket and database.
    static func startDaemon(_ directory: String) throws -> (pid: pid_t, socket: String) {
        let config = directory + "/baton.json5"
        try #"{ shutdownGrace: "1s", actions: { hold: { exec: ["sleep", "600"], policy: "join" }, hello: { exec: ["true"] } } }"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        let socket = directory + "/baton.sock"
        let pid = try spawn(binaries.appendingPathComponent("batond").path,
                            ["--config", config, "--socket", socket, "--database", directory + "/history.sqlite"], quiet: true)
        for _ in 0..<500 {
            if let client = try? LineClient(path: socket), client.call(#"{"op":"ping"}"#) != nil { return (pid, socket) }
            usleep(10_000)
        }
        throw BenchError("batond did not start on \(socket)")
    }

    /// 8. Peak RSS of batond idle and with `clients` connections waiting on one joined run.
    static func memory(clients: Int) throws -> [Figure] {
        let directory = scratchDirectory("memory")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (pid, socket) = try startDaemon(directory)
        defer { kill(pid, SIGTERM); var status: Int32 = 0; waitpid(pid, &status, 0) }
        let idle = rss(pid)
        var waiting: [LineClient] = []
        waiting.reserveCapacity(clients)
        for _ in 0..<clients {
            guard let client = try? LineClient(path: socket) else { break }
            _ = client.send(#"{"op":"trigger","action":"hold"}"#)
            waiting.append(client)
        }
        // Each waiting client has its first update once its trigger has joined.
        var joined = 0
        for client in waiting where client.readLine() != nil { joined += 1 }
        let loaded = rss(pid)
        _ = try LineClient(path: socket).call(#"{"op":"cancel","action":"hold"}"#)
        waiting.removeAll()
        let perClient = joined > 0 ? Double(loaded.peak - idle.current) / Double(joined) : 0
        return [
            Figure("memory: batond RSS idle", Double(idle.current) / 1024, "MiB"),
            Figure("memory: batond peak RSS with \(joined) clients waiting on one joined run", Double(loaded.peak) / 1024, "MiB",
                   baseline: ("idle RSS", Double(idle.current) / 1024), lowerIsBetter: true,
                   note: String(format: "%.1f KiB per waiting client", perClient)),
        ]
    }

    /// 9. Wall time of `baton status` against a trivial statically linked Swift program. The three
    /// programs take turns, sample by sample, so that a machine whose speed drifts (a shared VM)
    /// moves each of them alike; the figure is each one's median.
    static func cli(samples: Int) throws -> [Figure] {
        let directory = scratchDirectory("cli")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (pid, socket) = try startDaemon(directory)
        defer { kill(pid, SIGTERM); var status: Int32 = 0; waitpid(pid, &status, 0) }
        let baton = binaries.appendingPathComponent("baton").path
        let programs = [(baton, ["--socket", socket, "status"]), (baton, ["--version"]), (try trivialProgram(), [String]())]
        var milliseconds = Array(repeating: [Double](), count: programs.count)
        for _ in 0..<samples {
            for (index, (path, arguments)) in programs.enumerated() {
                let watch = Stopwatch()
                let child = try spawn(path, arguments, quiet: true)
                var status: Int32 = 0
                while waitpid(child, &status, 0) < 0 && errno == EINTR {}
                milliseconds[index].append(watch.seconds * 1000)
            }
        }
        let (status, version, base) = (percentile(milliseconds[0], 50), percentile(milliseconds[1], 50), percentile(milliseconds[2], 50))
        return [
            Figure("cli: baton status wall time p50", status, "ms", baseline: ("trivial static Swift program p50", base), lowerIsBetter: true),
            Figure("cli: baton --version wall time p50", version, "ms", baseline: ("trivial static Swift program p50", base), lowerIsBetter: true),
        ]
    }

    /// Compiles `print("hi")` with -static-stdlib once, next to the benchmark.
    static func trivialProgram() throws -> String {
        let output = binaries.appendingPathComponent("baton-bench-trivial").path
        if FileManager.default.isExecutableFile(atPath: output) { return output }
        let source = NSTemporaryDirectory() + "baton-bench-trivial-\(getpid()).swift"
        try #"print("hi")"#.write(toFile: source, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: source) }
        let swiftc = ["/usr/bin/swiftc", "/usr/local/bin/swiftc"].first { FileManager.default.isExecutableFile(atPath: $0) }
            ?? (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/swiftc" }
                .first { FileManager.default.isExecutableFile(atPath: $0) }
        guard let swiftc else { throw BenchError("swiftc not found to build the trivial baseline") }
        let child = try spawn(swiftc, ["-O", "-static-stdlib", source, "-o", output], quiet: true)
        var status: Int32 = 0
        while waitpid(child, &status, 0) < 0 && errno == EINTR {}
        guard FileManager.default.isExecutableFile(atPath: output) else { throw BenchError("could not build \(output)") }
        return output
    }

    /// The current and peak resident set size of a process, in KiB.
    static func rss(_ pid: pid_t) -> (current: Int, peak: Int) {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        func field(_ name: String) -> Int {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return 0 }
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
        }
        return (field("VmRSS:"), field("VmHWM:"))
    }

    /// posix_spawn with the environment of this process; `quiet` sends stdout and stderr to /dev/null.
    static func spawn(_ path: String, _ arguments: [String], quiet: Bool = false) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if quiet {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard rc == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(rc)))") }
        return pid
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
