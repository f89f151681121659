import BatonCore
import CBatonSystem
import Foundation

/// The real thing: the `batond` binary on its own socket and database, driven the way a user
/// would (detached triggers pipelined on one connection, then a `wait` for each), running
/// `/bin/true` under distinct keys. Against raw `posix_spawn` + `waitpid` at the same parallelism,
/// measured just before and just after in the same run; batond's CPU time per run from /proc.
enum BatondBench {
    static func run(runs: Int, binary: String) async throws -> [Figure] {
        var figures: [Figure] = []
        for parallelism in [2, 4] {
            let before = await rawSpawn(count: runs, parallelism: parallelism)
            let measured = try await blocking { Result { try drive(binary: binary, runs: runs, parallelism: parallelism) } }.get()
            let after = await rawSpawn(count: runs, parallelism: parallelism)
            let raw = (before + after) / 2
            figures.append(Figure("real batond: /bin/true runs/s, parallelism \(parallelism), \(runs) keys (FULL)", measured.rate, "/s",
                                  baseline: ("posix_spawn + waitpid loop, \(parallelism) threads", raw), target: "≥ 0.8 of raw"))
            figures.append(Figure("real batond: CPU per /bin/true run, parallelism \(parallelism)", measured.cpuPerRun * 1_000, "ms",
                                  target: "≤ 0.2 ms", note: "utime+stime of batond from /proc over the batch"))
        }
        return figures
    }

    struct Measured: Sendable {
        var rate: Double
        var cpuPerRun: Double
    }

    /// Starts batond, triggers `runs` detached runs of `/bin/true` (each its own key), waits for
    /// every one, and stops it.
    static func drive(binary: String, runs: Int, parallelism: Int) throws -> Measured {
        let directory = scratchDirectory("batond-\(parallelism)")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let config = directory + "/baton.json5"
        try """
            { maxConcurrentRuns: \(parallelism), retention: { maxRunsPerAction: 1000000 },
              actions: { t: { exec: ["/bin/true"], params: { k: {} }, keyParams: ["k"] } } }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let socket = directory + "/baton.sock"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--config", config, "--socket", socket, "--database", directory + "/history.sqlite"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let client = try connect(socket, until: .now + .seconds(10))
        for index in 0..<20 { _ = client.call(#"{"op":"trigger","action":"t","params":{"k":"warm\#(index)"}}"#) }

        let cpuBefore = cpuSeconds(of: process.processIdentifier)
        let watch = Stopwatch()
        let ids = pipeline(client, (0..<runs).map { #"{"op":"trigger","action":"t","params":{"k":"\#($0)"},"detach":true}"# })
            .compactMap(runID)
        let ends = pipeline(client, ids.map { #"{"op":"wait","run":\#($0)}"# })
        let elapsed = watch.seconds
        let cpu = cpuSeconds(of: process.processIdentifier) - cpuBefore
        guard ids.count == runs, ends.count == runs, ends.allSatisfy({ LineClient.contains($0, #""phase":"success""#) }) else {
            throw BenchError("batond answered \(ids.count) triggers and \(ends.count) waits of \(runs)")
        }
        return Measured(rate: Double(runs) / elapsed, cpuPerRun: cpu / Double(runs))
    }

    /// Sends every line while reading the final answers (on another thread, so neither side's
    /// socket buffer can fill and stall the other); returns the answers in order.
    static func pipeline(_ client: LineClient, _ lines: [String]) -> [[UInt8]] {
        let fd = client.fd
        let sender = Thread {
            let text = lines.joined(separator: "\n") + "\n"
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if n < 0 { if errno == EINTR { continue }; return }
                bytes = bytes.dropFirst(n)
            }
        }
        sender.start()
        var answers: [[UInt8]] = []
        while answers.count < lines.count, let line = client.readLine() {
            if LineClient.isFinal(line) { answers.append(line) }
        }
        return answers
    }

    static func connect(_ socket: String, until deadline: ContinuousClock.Instant) throws -> LineClient {
        while true {
            if let client = try? LineClient(path: socket), client.call(#"{"op":"ping"}"#) != nil { return client }
            guard ContinuousClock.now < deadline else { throw BenchError("batond did not answer on \(socket)") }
            usleep(10_000)
        }
    }

    static func runID(_ line: [UInt8]) -> Int64? {
        let text = String(decoding: line, as: UTF8.self)
        guard let range = text.range(of: #""run":{"#), let id = text[range.upperBound...].range(of: #""id":"#) else { return nil }
        return Int64(text[id.upperBound...].prefix { $0.isNumber })
    }

    /// utime + stime of a process, in seconds.
    static func cpuSeconds(of pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command: state is field 3; utime and stime are fields 14 and 15.
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / ticks
    }

    /// `count` runs of `/bin/true` with posix_spawn + waitpid on `parallelism` threads; runs/s.
    static func rawSpawn(count: Int, parallelism: Int) async -> Double {
        await blocking {
            let next = Counter()
            let watch = Stopwatch()
            let group = DispatchGroup()
            for _ in 0..<parallelism {
                group.enter()
                Thread.detachNewThread {
                    let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
                    defer { free(argv[0]); group.leave() }
                    while next.next() <= count {
                        var pid: pid_t = 0
                        guard posix_spawn(&pid, "/bin/true", nil, nil, argv, environ) == 0 else { return }
                        var status: Int32 = 0
                        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                    }
                }
            }
            group.wait()
            return Double(count) / watch.seconds
        }
    }
}
