import BatonCore
import BatonFleet
import Foundation

extension FleetBench {
    /// A transition on host 1 to a `watch` on host 2: for each update the watch sends of a run
    /// triggered on host 1, its arrival (wall clock, this machine's, as the transition's `at`)
    /// minus the transition's `at` (taken on host 1 before its transaction). One trigger at a time,
    /// each waited for on the watch before the next (the NOTIFY path: every commit wakes host 2's
    /// feed, which reads it at once), then `samples * 5` pipelined (the catch-up path: host 2's
    /// feed reads everything committed since its last read, in pages, while host 1 commits more).
    static func latency(binary: String, conninfo: String, samples: Int) throws -> [Figure] {
        let hosts = try Hosts(binary: binary, conninfo: conninfo, count: 2)
        defer { hosts.stop() }
        let watch = try Watch(socket: hosts.sockets[1])
        let trigger = try LineClient(path: hosts.sockets[0])
        let tag = UUID().uuidString.prefix(8)
        var single: [Int64] = []
        for index in 0..<samples {
            guard let id = trigger.call(#"{"op":"trigger","action":"t","params":{"k":"\#(tag)-one-\#(index)"},"detach":true}"#)
                .flatMap(BatondBench.runID) else { throw BenchError("host 1 refused a trigger") }
            single.append(id)
            try watch.waitForEnd(of: [id])
        }
        let burst = BatondBench.pipeline(trigger, (0..<(samples * 5)).map {
            #"{"op":"trigger","action":"t","params":{"k":"\#(tag)-burst-\#($0)"},"detach":true}"#
        }).compactMap(BatondBench.runID)
        guard burst.count == samples * 5 else { throw BenchError("host 1 answered \(burst.count) of \(samples * 5) triggers") }
        try watch.waitForEnd(of: burst)
        let one = watch.latencies(of: Set(single)), many = watch.latencies(of: Set(burst))
        // Each phase's p99 apart: a burst's `queued` waits for its trigger batch's transaction
        // (stamped with the database's clock as it opens), the others for one run's end.
        let byPhase = ["queued", "loading", "success"].map { phase in
            String(format: "%@ %.1f", phase, percentile(watch.latencies(of: Set(burst), to: phase), 99))
        }.joined(separator: ", ")
        let notifyNote = "one trigger at a time: queued, loading and success of each, \(one.count) transitions"
        let burstNote = "\(burst.count) triggers pipelined on host 1: \(many.count) transitions; p99 by phase (ms): \(byPhase)"
        return [
            Figure("fleet: transition on host 1 to watch on host 2, NOTIFY path, p50", percentile(one, 50), "ms", note: notifyNote),
            Figure("fleet: transition on host 1 to watch on host 2, NOTIFY path, p99", percentile(one, 99), "ms", target: "<= 50 ms", note: notifyNote),
            Figure("fleet: transition on host 1 to watch on host 2, catch-up path, p50", percentile(many, 50), "ms", note: burstNote),
            Figure("fleet: transition on host 1 to watch on host 2, catch-up path, p99", percentile(many, 99), "ms", target: "<= 50 ms", note: burstNote),
        ]
    }

    /// A `watch` on a host, read on a thread of its own: each update's run, phase, and latency.
    /// The reader thread opens and owns the connection and hands each update on as it comes, down a chain of
    /// one-shot cells (it holds the chain's end); the measuring thread follows the chain from its
    /// start and owns what it has seen. Nothing is shared but the cells.
    final class Watch {
        enum Item: Sendable {
            case update(run: Int64, to: String, milliseconds: Double)
            case closed
        }

        struct Link: Sendable {
            let item: Item
            let next: OneShot<Link>
        }

        private var next: OneShot<Link>
        private var updates: [(run: Int64, to: String, milliseconds: Double)] = []
        private var ended = Set<Int64>()
        private var closed = false

        init(socket: String) throws {
            let (start, opened) = (OneShot<Link>(), OneShot<Bool>())
            next = start
            Thread.detachNewThread { Self.read(socket, opened: opened, into: start) }
            guard opened.wait() else { throw BenchError("the watch on host 2 did not start") }
        }

        /// The reader thread: the watch made (`opened` says whether), then each transition it
        /// sends, then `closed`, down the chain.
        private static func read(_ socket: String, opened: OneShot<Bool>, into start: OneShot<Link>) {
            guard let client = try? LineClient(path: socket), client.send(#"{"op":"watch"}"#), let first = client.readLine(),
                  LineClient.contains(first, #""watching""#) else {
                opened.set(false)
                return
            }
            opened.set(true)
            var end = start
            func hand(_ item: Item) {
                let cell = OneShot<Link>()
                end.set(Link(item: item, next: cell))
                end = cell
            }
            while let line = client.readLine() {
                let arrived = Timestamp.now.rawValue
                let text = String(decoding: line, as: UTF8.self)
                guard let range = text.range(of: #""transition":{"#) else { continue }
                let transition = text[range.upperBound...]
                guard let run = Self.number("runID", in: transition), let at = Self.number("at", in: transition),
                      let to = transition.range(of: #""to":""#).map({ String(transition[$0.upperBound...].prefix { $0 != "\"" }) }) else { continue }
                hand(.update(run: run, to: to, milliseconds: Double(arrived - at) / 1_000))
            }
            hand(.closed)
        }

        /// Takes the next item of the chain, waiting for it until `deadline` (nil: not at all);
        /// false when there was none by then.
        private func take(until deadline: DispatchTime?) -> Bool {
            guard let link = deadline.map({ next.wait(until: $0) }) ?? next.value else { return false }
            next = link.next
            switch link.item {
            case let .update(run, to, milliseconds):
                updates.append((run, to, milliseconds))
                if to == "success" || to == "failure" || to == "cancelled" { ended.insert(run) }
            case .closed:
                closed = true
            }
            return true
        }

        /// Until the watch has seen every run of `runs` end (a minute at most).
        func waitForEnd(of runs: [Int64]) throws {
            let wanted = Set(runs), deadline = DispatchTime.now() + .seconds(60)
            while true {
                let count = wanted.intersection(ended).count
                if count == wanted.count { return }
                guard !closed, take(until: deadline) else {
                    throw BenchError("the watch on host 2 saw \(count) of \(runs.count) runs end")
                }
            }
        }

        /// The latencies of `runs`' updates, or of those to `phase` only (what came so far).
        func latencies(of runs: Set<Int64>, to phase: String? = nil) -> [Double] {
            while take(until: nil) {}
            return updates.filter { runs.contains($0.run) && (phase == nil || $0.to == phase) }.map(\.milliseconds)
        }

        static func number(_ key: String, in text: Substring) -> Int64? {
            guard let range = text.range(of: "\"\(key)\":") else { return nil }
            return Int64(text[range.upperBound...].prefix { $0.isNumber || $0 == "-" })
        }
    }
}

/// The PostgreSQL server's CPU time, from /proc (the server on this machine): the postmaster's
/// utime + stime, its children's that have exited (cutime + cstime), and each live child's.
struct ServerCPU {
    let postmaster: Int32

    init(conninfo: String) throws {
        let db = try PGConnection(conninfo)
        guard let backend = try db.query("SELECT pg_backend_pid()").first?[0].flatMap({ Int32($0) }),
              let status = try? String(contentsOfFile: "/proc/\(backend)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("PPid:") }),
              let parent = Int32(line.dropFirst(5).trimmingCharacters(in: .whitespaces)) else {
            throw BenchError("cannot find the PostgreSQL server's processes in /proc (is it on this machine?)")
        }
        postmaster = parent
    }

    func seconds() -> Double {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        var total = 0.0
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let fields = Self.stat(pid), fields.count > 14 else { continue }
            // After the command: state, ppid, … utime (11), stime (12), cutime (13), cstime (14).
            let numbers = fields.map { Double($0) ?? 0 }
            if pid == postmaster {
                total += numbers[11] + numbers[12] + numbers[13] + numbers[14]
            } else if Int32(fields[1]) == postmaster {
                total += numbers[11] + numbers[12]
            }
        }
        return total / ticks
    }

    /// How many processes the server has (backends included).
    func children() -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).count { entry in
            guard let pid = Int32(entry), let fields = Self.stat(pid), fields.count > 1 else { return false }
            return Int32(fields[1]) == postmaster
        }
    }

    private static func stat(_ pid: Int32) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8), let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(after: close)...].split(separator: " ")
    }
}
