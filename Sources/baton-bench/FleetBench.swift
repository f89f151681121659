import BatonCore
import BatonFleet
import Foundation

/// The fleet on PostgreSQL (`--fleet CONNINFO`, a database of its own): 1 and 3 real batond
/// hosts, `runs` detached `/bin/true` triggers under distinct keys spread over the hosts and
/// pipelined, then a `wait` for each. Triggers/s (every answer durable in PostgreSQL) and runs/s
/// against pgbench's single-row INSERT rate on the same server at the same client count,
/// measured in this run; the PostgreSQL server's CPU (its processes' utime + stime from /proc,
/// the server on this machine) per trigger and per run beside them; 3 hosts against 1. Then the
/// fleet's latency: a transition on one host to a `watch` on another, p50/p99, one trigger at a
/// time (the NOTIFY path: each commit wakes the other host's feed) and under a burst (the
/// catch-up path: each read of the feed takes everything committed since the one before).
enum FleetBench {
    static func run(conninfo: String, runs: Int, binary: String, seconds: Double) async throws -> [Figure] {
        var figures: [Figure] = []
        var rates: [Int: Double] = [:]
        for hosts in [1, 3] {
            let (inserts, insertCPU) = try pgbenchInserts(conninfo: conninfo, clients: hosts, seconds: seconds)
            let measured = try await blocking { Result { try drive(binary: binary, conninfo: conninfo, hosts: hosts, runs: runs) } }.get()
            let name = "fleet, \(hosts) host\(hosts == 1 ? "" : "s")"
            figures.append(Figure("\(name): triggers/s, \(runs) keys", measured.triggers, "/s",
                                  baseline: ("pgbench single-row INSERT, \(hosts) client\(hosts == 1 ? "" : "s")", inserts),
                                  note: "each trigger one transaction, locking its key's slot row"))
            figures.append(Figure("\(name): /bin/true runs/s, \(runs) keys", measured.runs, "/s",
                                  baseline: ("pgbench single-row INSERT, \(hosts) client\(hosts == 1 ? "" : "s")", inserts),
                                  note: "a run is 2 transactions: the trigger (which starts it when its key and a slot are free) and its end"))
            figures.append(Figure("\(name): PostgreSQL CPU per trigger", measured.serverPerTrigger * 1_000, "ms",
                                  baseline: ("pgbench single-row INSERT", insertCPU * 1_000), lowerIsBetter: true,
                                  note: "the server's processes' utime + stime while the triggers were answered, over the triggers"))
            figures.append(Figure("\(name): PostgreSQL CPU per run", measured.serverPerRun * 1_000, "ms",
                                  note: "the same from the first trigger to the last run's end (trigger, start, end, every host's feed), over the runs"))
            for (what, cpu) in [("trigger", measured.batondPerTrigger), ("run", measured.batondPerRun)] {
                figures.append(Figure("\(name): batond CPU per \(what)", cpu.total * 1_000, "ms", lowerIsBetter: true,
                                      note: "every host's utime + stime from /proc, summed; its loop \(String(format: "%.3f", cpu.loop * 1_000)) ms, "
                                        + "its writer \(String(format: "%.3f", cpu.writer * 1_000)) ms"))
            }
            rates[hosts] = measured.runs
        }
        if let one = rates[1], let three = rates[3] {
            figures.append(Figure("fleet, 3 hosts against 1: runs/s", three, "/s", baseline: ("1 host", one), target: ">= 1.0",
                                  note: "same server, same CPUs"))
        }
        figures += try await blocking { Result { try latency(binary: binary, conninfo: conninfo, samples: runs / 5) } }.get()
        return figures
    }

    /// pgbench's transactions/s for one `INSERT` of one row, `clients` connections, on a table of its own.
    /// Also the server's CPU seconds per INSERT.
    static func pgbenchInserts(conninfo: String, clients: Int, seconds: Double) throws -> (Double, Double) {
        let db = try PGConnection(conninfo)
        let server = try ServerCPU(conninfo: conninfo)
        try db.execute("CREATE TABLE IF NOT EXISTS bench_rows (id bigserial PRIMARY KEY, v text NOT NULL)")
        let scratch = scratchDirectory("pgbench")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let script = scratch + "/insert.sql"
        try "INSERT INTO bench_rows (v) VALUES ('x');\n".write(toFile: script, atomically: true, encoding: .utf8)
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.compactMap { Int($0) } ?? []
        let pgbench = "/usr/lib/postgresql/\(versions.max() ?? 15)/bin/pgbench"
        let process = Process()
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: pgbench)
        // A count of transactions, not -T: pgbench ends -T with SIGALRM, which a child started
        // from one of our threads inherits blocked (it would insert forever).
        let transactions = max(Int(seconds * 1_500), 300)
        process.arguments = ["-n", "-f", script, "-c", String(clients), "-j", String(clients), "-t", String(transactions), conninfo]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let children = server.children()
        let before = server.seconds()
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // pgbench's backends count once the server has reaped them (their time moves to its cutime).
        for _ in 0..<300 where server.children() > children { usleep(10_000) }
        let cpu = (server.seconds() - before) / Double(transactions * clients)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
              let tps = Double(line.dropFirst(6).prefix { $0.isNumber || $0 == "." }) else {
            throw BenchError("pgbench gave no rate: \(text.suffix(300))")
        }
        return (tps, cpu)
    }

    struct Measured: Sendable {
        var triggers: Double
        var runs: Double
        /// Server CPU seconds per trigger (while triggering) and per run (the whole drive).
        var serverPerTrigger: Double
        var serverPerRun: Double
        /// The batonds' CPU seconds (every host's, summed) per trigger and per run, and their loops' part.
        var batondPerTrigger = ThreadCPU()
        var batondPerRun = ThreadCPU()
    }

    /// `count` batond hosts on the database, each answering on its socket (a trigger taken: joined the fleet).
    final class Hosts {
        let directory: String
        var processes: [Process] = []
        var sockets: [String] = []

        init(binary: String, conninfo: String, count: Int) throws {
            directory = scratchDirectory("fleet-\(count)")
            do {
                for index in 1...count {
                    let config = directory + "/host\(index).json5"
                    try """
                        { postgres: "\(conninfo)", host: "bench-\(index)", maxConcurrentRuns: 2, retention: { maxRunsPerAction: 1000000 },
                          actions: { t: { exec: ["/bin/true"], params: { k: {} }, keyParams: ["k"] } } }
                        """.write(toFile: config, atomically: true, encoding: .utf8)
                    let process = Process()
                    process.executableURL = URL(fileURLWithPath: binary)
                    process.arguments = ["--config", config, "--socket", directory + "/host\(index).sock"]
                    process.standardError = FileHandle.nullDevice
                    try process.run()
                    processes.append(process)
                    sockets.append(directory + "/host\(index).sock")
                    let client = try BatondBench.connect(directory + "/host\(index).sock", until: .now + .seconds(20))
                    while !LineClient.contains(client.call(#"{"op":"trigger","action":"t","params":{"k":"warm\#(index)"}}"#) ?? [], #""ok":true"#) {
                        usleep(50_000)
                    }
                }
            } catch {
                stop()
                throw error
            }
        }

        func stop() {
            for process in processes { process.terminate(); process.waitUntilExit() }
            processes = []
            try? FileManager.default.removeItem(atPath: directory)
        }

        deinit { stop() }
    }

    static func drive(binary: String, conninfo: String, hosts count: Int, runs: Int) throws -> Measured {
        let hosts = try Hosts(binary: binary, conninfo: conninfo, count: count)
        defer { hosts.stop() }
        let server = try ServerCPU(conninfo: conninfo)
        let sockets = hosts.sockets
        let tag = UUID().uuidString.prefix(8)
        let shares = (0..<count).map { host in (0..<runs).filter { $0 % count == host } }
        let batonds = { hosts.processes.map { ThreadCPU(of: $0.processIdentifier) }.reduce(ThreadCPU(), +) }
        let batondAtStart = batonds()
        let cpuAtStart = server.seconds()
        let watch = Stopwatch()
        // Each host's thread triggers its share on a connection of its own and gives back the ids it was answered.
        let ids = onThreads(count) { host in
            guard let client = try? LineClient(path: sockets[host]) else { return [Int64]() }
            let lines = shares[host].map { #"{"op":"trigger","action":"t","params":{"k":"\#(tag)-\#($0)"},"detach":true}"# }
            return BatondBench.pipeline(client, lines).compactMap(BatondBench.runID)
        }
        let triggered = watch.seconds
        let cpuTriggered = server.seconds()
        let batondTriggered = batonds()
        let ended = onThreads(count) { host in
            guard let client = try? LineClient(path: sockets[host]) else { return 0 }
            let ends = BatondBench.pipeline(client, ids[host].map { #"{"op":"wait","run":\#($0)}"# })
            return ends.count { LineClient.contains($0, #""phase":"success""#) }
        }.reduce(0, +)
        let elapsed = watch.seconds
        let cpuEnded = server.seconds()
        let batondEnded = batonds()
        let answered = ids.reduce(0) { $0 + $1.count }
        guard answered == runs, ended == runs else {
            throw BenchError("the fleet answered \(answered) triggers and \(ended) successful waits of \(runs)")
        }
        return Measured(triggers: Double(runs) / triggered, runs: Double(runs) / elapsed,
                        serverPerTrigger: (cpuTriggered - cpuAtStart) / Double(runs), serverPerRun: (cpuEnded - cpuAtStart) / Double(runs),
                        batondPerTrigger: (batondTriggered - batondAtStart) / Double(runs), batondPerRun: (batondEnded - batondAtStart) / Double(runs))
    }
}

