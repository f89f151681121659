import BatonCore
import CBatonSystem
import Foundation

/// The real thing: the `batond` binary on its own socket and database, driven the way a user
/// would (detached triggers pipelined on one connection, then a `wait` for each), running
/// `/bin/true` under distinct keys. Against raw `posix_spawn` + `waitpid` at the same parallelism,
/// measured just before and just after in the same run; batond's CPU time per run from /proc.
enum BatondBench {
    static func run(runs: Int, binary: String, parallelisms: [Int], shim: BatondShim = .asFound,
                    runtime: BatondRuntime = .tmpfs) async throws -> [Figure] {
        var figures: [Figure] = []
        let cgroups = CgroupSpawn.parent()
        for parallelism in parallelisms {
            // Rounds interleaved: each baseline just before and just after batond.
            let before = await rawSpawn(count: runs, parallelism: parallelism)
            let cgroupBefore = await cgroups.asyncFlatMap { await CgroupSpawn.rate(count: runs, parallelism: parallelism, in: $0) }
            let measured = try await blocking { Result { try drive(binary: binary, runs: runs, parallelism: parallelism, shim: shim, runtime: runtime) } }.get()
            let after = await rawSpawn(count: runs, parallelism: parallelism)
            let cgroupAfter = await cgroups.asyncFlatMap { await CgroupSpawn.rate(count: runs, parallelism: parallelism, in: $0) }
            let raw = (before + after) / 2
            figures.append(Figure("real batond: /bin/true runs/s, parallelism \(parallelism), \(runs) keys (FULL)", measured.rate, "/s",
                                  baseline: ("posix_spawn + waitpid loop, \(parallelism) threads", raw), target: "≥ 0.8 of raw",
                                  note: measured.shim.description))
            figures.append(Figure("real batond: actions under baton-shim, parallelism \(parallelism)", measured.shim.used.map { $0 ? 1 : 0 } ?? -1, "",
                                  note: "1: under the shim, 0: direct spawns, -1: batond did not say; " + measured.shim.description))
            figures += cgroupFigures(measured, raw: raw, cgroup: cgroupBefore.flatMap { b in cgroupAfter.map { .mean(b, $0) } },
                                     parallelism: parallelism)
            figures += cpuFigures(measured, parallelism: parallelism)
        }
        return figures
    }

    /// The spawn-into-a-fresh-cgroup baseline against raw spawn, and batond against it; or why
    /// it could not be measured here.
    static func cgroupFigures(_ measured: Measured, raw: Double, cgroup: Result<CgroupSpawn.Measured, BenchError>,
                              parallelism: Int) -> [Figure] {
        let name = "mkdir + clone3(CLONE_INTO_CGROUP|CLONE_PIDFD) + pidfd wait + rmdir, \(parallelism) threads"
        switch cgroup {
        case let .success(spawned):
            let rate = spawned.rate
            return [
                Figure("spawn into a fresh cgroup: CPU per spawn, \(parallelism) threads", spawned.cpu * 1_000, "ms",
                       note: "the spawning process's utime + stime (not the child's): the floor of batond's spawner threads per run"),
                Figure("spawn into a fresh cgroup: /bin/true/s, \(parallelism) threads", rate, "/s",
                       baseline: ("posix_spawn + waitpid loop, \(parallelism) threads", raw), note: name),
                Figure("real batond against spawn into a fresh cgroup, parallelism \(parallelism)", measured.rate, "/s",
                       baseline: (name, rate), target: "≥ 0.8"),
            ]
        case let .failure(why):
            return [Figure("spawn into a fresh cgroup, \(parallelism) threads: not measured", 0, "/s", note: why.description)]
        }
    }

    /// batond's CPU per run, all threads and by thread: what one run costs the loop bounds
    /// runs/s at 1 / that time, whatever the machine's cores.
    static func cpuFigures(_ measured: Measured, parallelism: Int) -> [Figure] {
        let perRun = { (seconds: Double) in seconds / Double(measured.runs) * 1_000 }
        let cpu = measured.cpu
        return [
            Figure("real batond: CPU per /bin/true run, parallelism \(parallelism)", perRun(cpu.total), "ms",
                   target: "≤ 0.25 ms", note: "utime+stime of batond from /proc over the batch"),
            Figure("real batond: loop (baton-reactor) CPU per run, parallelism \(parallelism)", perRun(cpu.loop), "ms",
                   target: "≤ 0.08 ms", note: String(format: "bounds runs/s at %.0f", cpu.loop > 0 ? Double(measured.runs) / cpu.loop : 0)),
            Figure("real batond: writer (baton-store) CPU per run, parallelism \(parallelism)", perRun(cpu.writer), "ms",
                   target: "≤ 0.08 ms"),
            Figure("real batond: other threads' CPU per run, parallelism \(parallelism)", perRun(cpu.others), "ms",
                   note: "all but the loop and the writer: the figures below, by thread"),
        ] + otherFigures(cpu, parallelism: parallelism, perRun: perRun)
    }

    /// The other threads by kind (their names, see `ThreadCPU.kind`), and those that ended during the batch.
    static func otherFigures(_ cpu: ThreadCPU, parallelism: Int, perRun: (Double) -> Double) -> [Figure] {
        var kinds: [String: Double] = [:], names: [String: [String]] = [:]
        for (name, seconds) in cpu.byName where name != "baton-reactor" && name != "baton-store" {
            kinds[ThreadCPU.kind(of: name), default: 0] += seconds
            names[ThreadCPU.kind(of: name), default: []].append(String(format: "%@ %.3f ms", name, perRun(seconds)))
        }
        let shown = ThreadCPU.kinds.map { kind in
            Figure("real batond: \(kind) CPU per run, parallelism \(parallelism)", perRun(kinds[kind] ?? 0), "ms",
                   note: names[kind].map { $0.sorted().joined(separator: ", ") })
        }
        return shown + [Figure("real batond: ended threads' CPU per run, parallelism \(parallelism)", perRun(cpu.ended), "ms",
                               note: "the process's utime + stime less its living threads' (clock-tick rounding included)")]
    }

    struct Measured: Sendable {
        var rate: Double
        var runs: Int
        var cpu: ThreadCPU
        /// What batond's log said of its shim (`BatondShim.used`).
        var shim: (used: Bool?, description: String)
    }

    /// Starts batond, triggers `runs` detached runs of `/bin/true` (each its own key), waits for
    /// every one, and stops it.
    static func drive(binary: String, runs: Int, parallelism: Int, shim: BatondShim, runtime: BatondRuntime) throws -> Measured {
        let directory = scratchDirectory("batond-\(parallelism)")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (environment, madeRuntime) = try runtime.prepare(scratch: directory)
        defer { if let madeRuntime { try? FileManager.default.removeItem(atPath: madeRuntime) } }
        let config = directory + "/baton.json5"
        try """
            { maxConcurrentRuns: \(parallelism), retention: { maxRunsPerAction: 1000000 },
              actions: { t: { exec: ["/bin/true"], params: { k: {} }, keyParams: ["k"] } } }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let socket = directory + "/baton.sock"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try shim.binary(binary, in: directory))
        process.arguments = ["--config", config, "--socket", socket, "--database", directory + "/history.sqlite"]
        process.environment = environment
        // Its log in a file: what it says of its shim is read once it has spawned.
        let log = directory + "/batond.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        defer {
            process.terminate()
            process.waitUntilExit()
        }
        let client = try connect(socket, until: .now + .seconds(10))
        for index in 0..<20 { _ = client.call(#"{"op":"trigger","action":"t","params":{"k":"warm\#(index)"}}"#) }

        let used = BatondShim.used(log: log)
        // batond also finds an installed shim (/usr/libexec/baton): then "alone" is not what is measured.
        if shim == .none, used.used == true { throw BenchError("--shim none, but batond runs its actions \(used.description)") }
        let cpuBefore = ThreadCPU(of: process.processIdentifier)
        let watch = Stopwatch()
        let ids = pipeline(client, (0..<runs).map { #"{"op":"trigger","action":"t","params":{"k":"\#($0)"},"detach":true}"# })
            .compactMap(runID)
        let ends = pipeline(client, ids.map { #"{"op":"wait","run":\#($0)}"# })
        let elapsed = watch.seconds
        let cpu = ThreadCPU(of: process.processIdentifier) - cpuBefore
        guard ids.count == runs, ends.count == runs, ends.allSatisfy({ LineClient.contains($0, #""phase":"success""#) }) else {
            throw BenchError("batond answered \(ids.count) triggers and \(ends.count) waits of \(runs)")
        }
        return Measured(rate: Double(runs) / elapsed, runs: runs, cpu: cpu, shim: used)
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

extension Result where Failure == BenchError {
    func asyncFlatMap<T>(_ body: (Success) async -> Result<T, BenchError>) async -> Result<T, BenchError> {
        switch self {
        case let .success(value): await body(value)
        case let .failure(error): .failure(error)
        }
    }
}
