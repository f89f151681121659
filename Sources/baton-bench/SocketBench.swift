import BatonCore
import BatonIPC
import BatonStore
import CBatonSystem
import Foundation

/// 2–6: the request path over a real socket, against raw baselines measured in the same run.
enum SocketBench {
    /// 2. No-op in-process actions per second from many clients on persistent connections,
    /// every transition recorded with the default durability (synchronous=FULL).
    static func noop(seconds: Double, clients: Int) async throws -> [Figure] {
        let daemon = try InProcessDaemon(name: "noop", maxConcurrentRuns: clients)
        await daemon.register(Action(name: "noop", params: ["k": ParamSpec()], keyParams: ["k"])) { _ in }
        let socket = daemon.socket
        let rate = await throughput(threads: clients, seconds: seconds) { index in
            let client = try! LineClient(path: socket)
            return { client.call(#"{"op":"trigger","action":"noop","params":{"k":"\#(index)"}}"#) != nil }
        }
        await daemon.stop()
        let scratch = scratchDirectory("noop-raw")
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let baseline = try StoreBench.raw(path: scratch + "/raw.sqlite", perTransaction: 100, seconds: seconds) / 3
        return [Figure("end to end: no-op runs/s, \(clients) clients, 3 transitions each (FULL)", rate, "/s",
                       baseline: ("raw SQLite runs/s (3 rows each, 100 rows per transaction)", baseline),
                       target: "10,000/s")]
    }

    /// 3. `/bin/true` runs per second through Baton against posix_spawn + waitpid at the same parallelism.
    static func spawn(seconds: Double, parallelism: Int) async throws -> [Figure] {
        let daemon = try InProcessDaemon(name: "spawn", actions: [
            Action(name: "true", exec: ["/bin/true"], params: ["k": ParamSpec()], keyParams: ["k"]),
        ], maxConcurrentRuns: parallelism)
        let socket = daemon.socket
        let rate = await throughput(threads: parallelism, seconds: seconds) { index in
            let client = try! LineClient(path: socket)
            return { client.call(#"{"op":"trigger","action":"true","params":{"k":"\#(index)"}}"#) != nil }
        }
        await daemon.stop()
        let raw = await throughput(threads: parallelism, seconds: seconds) { _ in
            var pid: pid_t = 0
            let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
            defer { free(argv[0]) }
            guard posix_spawn(&pid, "/bin/true", nil, nil, argv, environ) == 0 else { return false }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            return true
        }
        return [Figure("spawn: /bin/true runs/s through Baton, parallelism \(parallelism)", rate, "/s",
                       baseline: ("posix_spawn + waitpid loop", raw), target: "≥ 0.8 of raw")]
    }

    /// 4. Requests that do not write (ping, status) against a raw Unix socket line echo.
    static func requests(seconds: Double, clients: Int) async throws -> [Figure] {
        let daemon = try InProcessDaemon(name: "requests", maxConcurrentRuns: 2)
        await daemon.register(Action(name: "a")) { _ in }
        let socket = daemon.socket
        let ping = await throughput(threads: clients, seconds: seconds) { _ in
            let client = try! LineClient(path: socket)
            return { client.call(#"{"id":1,"op":"ping"}"#) != nil }
        }
        let status = await throughput(threads: clients, seconds: seconds) { _ in
            let client = try! LineClient(path: socket)
            return { client.call(#"{"id":1,"op":"status"}"#) != nil }
        }
        await daemon.stop()

        let echo = try EchoServer()
        let path = echo.path
        let raw = await throughput(threads: clients, seconds: seconds) { _ in
            let client = try! LineClient(path: path)
            return { client.send(#"{"id":1,"op":"ping"}"#) && client.readLine() != nil }
        }
        echo.stop()
        return [
            Figure("socket: ping requests/s, \(clients) clients", ping, "/s", baseline: ("raw Unix socket line echo", raw),
                   target: "≥ 0.5 of raw"),
            Figure("socket: status requests/s, \(clients) clients", status, "/s", baseline: ("raw Unix socket line echo", raw),
                   target: "≥ 0.5 of raw"),
        ]
    }

    /// 5. 10,000 concurrent triggers of one join action: exactly one run; time until every caller
    /// has the outcome; and the in-process cost of one single-flight decision.
    static func singleFlight(triggers: Int) async throws -> [Figure] {
        let daemon = try InProcessDaemon(name: "single", maxConcurrentRuns: 2)
        let gate = Gate()
        await daemon.register(Action(name: "shared", policy: .join)) { _ in await gate.wait() }
        let connections = 100
        let perConnection = triggers / connections
        let joined = Counter()
        let watch = Stopwatch()
        let socket = daemon.socket
        // Each connection's thread collects the run ids it was answered with and gives them back as it ends.
        let (runIDs, allAnswered) = await blocking {
            let sets = onThreads(connections) { _ -> Set<Int> in
                guard let client = try? LineClient(path: socket) else { return [] }
                for id in 0..<perConnection {
                    _ = client.send(#"{"id":\#(id),"op":"trigger","action":"shared"}"#)
                }
                var seen = Set<Int>()
                var runs = Set<Int>()
                var finals = 0
                while finals < perConnection, let line = client.readLine() {
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                          let id = object["id"] as? Int else { continue }
                    if object["ok"] != nil {
                        finals += 1
                        if let run = (object["run"] as? [String: Any])?["id"] as? Int { runs.insert(run) }
                    } else if seen.insert(id).inserted {
                        joined.add()
                        if joined.value == connections * perConnection { gate.open() }
                    }
                }
                return runs
            }
            return (sets.reduce(into: Set<Int>()) { $0.formUnion($1) }, watch.seconds)
        }
        // Baseline: the same number of requests, pipelined the same way, that do nothing (ping).
        let pingGroup = DispatchGroup()
        let pingWatch = Stopwatch()
        for _ in 0..<connections {
            pingGroup.enter()
            Thread.detachNewThread {
                defer { pingGroup.leave() }
                guard let client = try? LineClient(path: socket) else { return }
                for id in 0..<perConnection { _ = client.send(#"{"id":\#(id),"op":"ping"}"#) }
                var answers = 0
                while answers < perConnection, client.readLine() != nil { answers += 1 }
            }
        }
        let pingsAnswered = await blocking {
            pingGroup.wait()
            return pingWatch.seconds
        }
        await daemon.stop()

        // One decision in process (`KeyDecision`, as the conductor takes it): a join against a key already held.
        var table = FlightTable(limit: 4)
        let action = Action(name: "k", exec: ["true"])
        table.apply(.created(1), key: "k", slot: KeySlot(holder: 1))
        let decisions = 2_000_000
        let decisionWatch = Stopwatch()
        var joinedCount = 0
        for candidate in 0..<decisions {
            var slot = table.slot(of: "k")
            let decided = KeyDecision.decide(KeyDecision.Asked(action: action, policy: .join), KeyDecision.View(slot: slot, now: Timestamp(rawValue: 0)),
                                             slot: &slot, candidate: { Int64(candidate + 2) })
            if case .shared(.joined) = decided { joinedCount += 1 }
        }
        let nanoseconds = decisionWatch.seconds * 1e9 / Double(decisions)
        precondition(joinedCount == decisions)
        // Baseline: one lookup and update of a dictionary keyed by the same string.
        var counts: [String: Int] = ["k": 0]
        let lookupWatch = Stopwatch()
        for _ in 0..<decisions { counts["k", default: 0] += 1 }
        let lookup = lookupWatch.seconds * 1e9 / Double(decisions)
        precondition(counts["k"] == decisions)
        return [
            Figure("single flight: \(connections * perConnection) concurrent join triggers → \(runIDs.count) run(s); all answered in",
                   allAnswered * 1000, "ms", baseline: ("as many pipelined pings", pingsAnswered * 1000), lowerIsBetter: true,
                   note: runIDs.count == 1 ? "exactly one run" : "MORE THAN ONE RUN"),
            Figure("single flight: one decision in process (FlightTable.trigger)", nanoseconds, "ns",
                   baseline: ("one [String: Int] lookup and update", lookup), lowerIsBetter: true),
        ]
    }

    /// 6. Latency on an idle daemon: trigger → loading event, trigger → recorded outcome.
    static func latency(samples: Int) async throws -> [Figure] {
        let daemon = try InProcessDaemon(name: "latency", maxConcurrentRuns: 2)
        await daemon.register(Action(name: "noop")) { _ in }
        let socket = daemon.socket
        let (toLoading, toOutcome, pings) = await blocking { () -> ([Double], [Double], [Double]) in
            guard let client = try? LineClient(path: socket) else { return ([], [], []) }
            var toLoading: [Double] = []
            var toOutcome: [Double] = []
            var pings: [Double] = []
            for _ in 0..<samples {
                let ping = Stopwatch()
                _ = client.call(#"{"op":"ping"}"#)
                pings.append(ping.seconds * 1e6)
                let watch = Stopwatch()
                var loading: Double?
                _ = client.call(#"{"op":"trigger","action":"noop"}"#) { event in
                    if loading == nil, LineClient.contains(event, #""phase":"loading""#) { loading = watch.seconds * 1e6 }
                }
                toOutcome.append(watch.seconds * 1e6)
                if let loading { toLoading.append(loading) }
            }
            return (toLoading, toOutcome, pings)
        }
        await daemon.stop()
        let pingP50 = percentile(pings, 50)
        return [
            Figure("latency: trigger → loading, p50", percentile(toLoading, 50), "µs", baseline: ("ping round trip p50", pingP50), lowerIsBetter: true),
            Figure("latency: trigger → loading, p99", percentile(toLoading, 99), "µs", baseline: ("ping round trip p50", pingP50), lowerIsBetter: true),
            Figure("latency: trigger → recorded outcome, p50", percentile(toOutcome, 50), "µs", baseline: ("ping round trip p50", pingP50), lowerIsBetter: true),
            Figure("latency: trigger → recorded outcome, p99", percentile(toOutcome, 99), "µs", baseline: ("ping round trip p50", pingP50), lowerIsBetter: true),
        ]
    }
}

/// A line echo server on a Unix socket: one thread per connection, the simplest fast baseline.
final class EchoServer: Sendable {
    let path: String
    private let directory: String
    private let fd: Int32

    init() throws {
        directory = scratchDirectory("echo")
        path = directory + "/echo.sock"
        fd = try UnixSocket.listen(path: path, mode: 0o600)
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)   // listen() makes it non-blocking for epoll
        let fd = fd
        Thread.detachNewThread {
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { if errno == EINTR { continue }; return }
                Thread.detachNewThread {
                    var buffer = [UInt8](repeating: 0, count: 65_536)
                    while true {
                        let n = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
                        if n <= 0 { break }
                        var offset = 0
                        while offset < n {
                            let w = buffer[offset..<n].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                            if w <= 0 { break }
                            offset += w
                        }
                    }
                    close(client)
                }
            }
        }
    }

    func stop() {
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A one-way gate: waiters resume when it opens (a `OneShot` of nothing; a waiter before it
/// opens waits on a thread of its own).
final class Gate: Sendable {
    private let opened = OneShot<Void>()

    func wait() async {
        guard opened.value == nil else { return }
        await blocking { self.opened.wait() }
    }

    func open() { opened.set(()) }
}
