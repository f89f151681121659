import Foundation

// baton-bench: Baton against the machine's limits and raw baselines, each measured in this run.
//
//   swift build -c release && .build/release/baton-bench            # the full run (a few minutes)
//   .build/release/baton-bench --quick                                # a small run (CI runs this)
//   .build/release/baton-bench --only store,socket --json out.json

let usage = """
    usage: baton-bench [--quick] [--only LIST] [--json PATH] [--batond PATH] [--parallelism LIST] [--runs N] [--shim PATH|none] [--runtime tmpfs|none|PATH]
                       [--fleet CONNINFO]
      --quick        small sizes and short runs: checks that every benchmark works, figures are rough
      --only LIST    comma-separated: store, noop, spawn, batond, socket, single, latency, history, memory, cli, output
      --json PATH    where to write the results (default: .build/baton-bench.json)
      --batond PATH  the batond binary the batond figure drives (default: the one beside baton-bench)
      --parallelism LIST  the lane counts of the real batond figure, comma-separated (default: 2,4)
      --runs N       runs of the real batond figure at each lane count (default: 1500, --quick 200)
      --shim PATH|none  the real batond figure's batond copied into its scratch directory with this baton-shim
                     beside it, or alone (none fails where batond finds an installed shim anyway; default: batond
                     where it is, with the shim it finds; the table says which)
      --runtime tmpfs|none|PATH  the real batond figure's $RUNTIME_DIRECTORY, where its shims' directories go:
                     tmpfs, a fresh one under /dev/shm as systemd gives the service /run/baton (the default);
                     none, unset (batond takes /run/baton where it is safe, else the disk beside the database);
                     or this directory
      --fleet CONNINFO  also measure a fleet on this PostgreSQL database (scripts/bench-fleet makes one)
    """

var quick = false
var only: Set<String>?
var jsonPath = ".build/baton-bench.json"
var fleetConninfo: String?
var parallelisms = [2, 4]
var batondRuns: Int?
var batondShim = BatondShim.asFound
var batondRuntime = BatondRuntime.tmpfs
var batondBinary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("batond").path
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": quick = true
    case "--only":
        guard let list = arguments.popFirst() else { FileHandle.standardError.write(Data("--only needs a list\n".utf8)); exit(2) }
        only = Set(list.split(separator: ",").map(String.init))
    case "--json":
        guard let path = arguments.popFirst() else { FileHandle.standardError.write(Data("--json needs a path\n".utf8)); exit(2) }
        jsonPath = path
    case "--batond":
        guard let path = arguments.popFirst() else { FileHandle.standardError.write(Data("--batond needs a path\n".utf8)); exit(2) }
        batondBinary = path
    case "--parallelism":
        let list = arguments.popFirst()?.split(separator: ",").map { Int($0) } ?? []
        guard !list.isEmpty, list.allSatisfy({ ($0 ?? 0) > 0 }) else {
            FileHandle.standardError.write(Data("--parallelism needs lane counts, as 2,4,8,16\n".utf8)); exit(2)
        }
        parallelisms = list.compactMap { $0 }
    case "--runs":
        guard let count = arguments.popFirst().flatMap({ Int($0) }), count > 0 else {
            FileHandle.standardError.write(Data("--runs needs a number of runs\n".utf8)); exit(2)
        }
        batondRuns = count
    case "--shim":
        guard let choice = arguments.popFirst().flatMap({ BatondShim(argument: $0) }) else {
            FileHandle.standardError.write(Data("--shim needs an absolute path or none\n".utf8)); exit(2)
        }
        batondShim = choice
    case "--runtime":
        guard let choice = arguments.popFirst().flatMap({ BatondRuntime(argument: $0) }) else {
            FileHandle.standardError.write(Data("--runtime needs tmpfs, none or an absolute path\n".utf8)); exit(2)
        }
        batondRuntime = choice
    case "--fleet":
        guard let conninfo = arguments.popFirst() else { FileHandle.standardError.write(Data("--fleet needs a connection string\n".utf8)); exit(2) }
        fleetConninfo = conninfo
    case "--help", "-h": say(usage); exit(0)
    default: FileHandle.standardError.write(Data("unknown argument \(argument)\n\(usage)\n".utf8)); exit(2)
    }
}

signal(SIGPIPE, SIG_IGN)
let seconds = quick ? 0.3 : 3.0
var steps: [(String, () async throws -> [Figure])] = [
    ("store", { try await StoreBench.run(seconds: seconds) }),
    ("noop", { try await SocketBench.noop(seconds: seconds, clients: quick ? 8 : 32) }),
    ("spawn", { try await SocketBench.spawn(seconds: seconds, parallelism: 4) }),
    ("batond", { try await BatondBench.run(runs: batondRuns ?? (quick ? 200 : 1_500), binary: batondBinary,
                                                   parallelisms: parallelisms, shim: batondShim, runtime: batondRuntime) }),
    ("socket", { try await SocketBench.requests(seconds: seconds, clients: quick ? 4 : 16) }),
    ("single", { try await SocketBench.singleFlight(triggers: quick ? 1_000 : 10_000) }),
    ("latency", { try await SocketBench.latency(samples: quick ? 100 : 2_000) }),
    ("history", { try HistoryBench.run(runs: quick ? 20_000 : 1_000_000) }),
    ("memory", { try ProcessBench.memory(clients: quick ? 500 : 10_000) }),
    ("cli", { try ProcessBench.cli(samples: quick ? 5 : 300) }),
    ("output", { try await OutputBench.run(bytes: quick ? 32 << 20 : 1 << 30, binary: batondBinary, lines: quick ? 30 : 300,
                                           samples: quick ? 30 : 300) }),
]
if let conninfo = fleetConninfo {
    steps.append(("fleet", { try await FleetBench.run(conninfo: conninfo, runs: quick ? 150 : 1_500, binary: batondBinary, seconds: seconds) }))
}

struct Machine: Codable {
    var cpus: Int
    var memoryGiB: Double
    var kernel: String
    var disk: String
    var date: String
    var quick: Bool
}

func machine(quick: Bool) -> Machine {
    var info = utsname()
    uname(&info)
    let kernel = withUnsafeBytes(of: &info.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
    let kib = meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
        .flatMap { $0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first }.flatMap { Double($0) } ?? 0
    var stats = statvfs()
    statvfs(NSTemporaryDirectory(), &stats)
    let disk = String(format: "%@ (%.0f GiB, %.0f GiB free)", NSTemporaryDirectory(),
                      Double(stats.f_blocks) * Double(stats.f_frsize) / 1_073_741_824,
                      Double(stats.f_bavail) * Double(stats.f_frsize) / 1_073_741_824)
    return Machine(cpus: ProcessInfo.processInfo.activeProcessorCount, memoryGiB: (kib / 1_048_576 * 10).rounded() / 10,
                   kernel: kernel, disk: disk, date: ISO8601DateFormatter().string(from: Date()), quick: quick)
}

struct Results: Codable {
    var machine: Machine
    var figures: [Figure]
    var failures: [String]
}

let host = machine(quick: quick)
say("baton-bench on \(host.cpus) CPUs, \(host.memoryGiB) GiB, Linux \(host.kernel), \(host.disk)\(quick ? ", quick" : "")")
var figures: [Figure] = []
var failures: [String] = []
for (name, step) in steps where only.map({ $0.contains(name) }) ?? true {
    FileHandle.standardError.write(Data("… \(name)\n".utf8))
    do {
        let found = try await step()
        figures += found
        for figure in found {
            var line = "\(figure.name): \(show(figure.value)) \(figure.unit)"
            if let baseline = figure.baseline, let name = figure.baselineName {
                line += "  | \(name): \(show(baseline))"
                if let ratio = figure.ratio { line += "  | ratio \(String(format: "%.2f", ratio))" }
            }
            if let target = figure.target { line += "  | target \(target)" }
            if let note = figure.note { line += "  | \(note)" }
            say(line)
        }
    } catch {
        failures.append("\(name): \(error)")
        say("\(name): FAILED: \(error)")
    }
}

let encoder = JSONEncoder()
encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
let data = try encoder.encode(Results(machine: host, figures: figures, failures: failures))
try? FileManager.default.createDirectory(at: URL(fileURLWithPath: jsonPath).deletingLastPathComponent(), withIntermediateDirectories: true)
try data.write(to: URL(fileURLWithPath: jsonPath))
say("results: \(jsonPath)")
exit(failures.isEmpty ? 0 : 1)
