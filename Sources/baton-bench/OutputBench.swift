import BatonCore
import Foundation

/// A run's output through the real batond (issue 24): bytes/s kept with `output.keep` exceeded
/// against this process reading the same command's pipe; how long a follower waits for a line
/// after the process wrote it; and the trigger-to-end latency of other runs while one floods.
enum OutputBench {
    static func run(bytes: Int, binary: String, lines: Int, samples: Int) async throws -> [Figure] {
        try await blocking { Result { try measure(bytes: bytes, binary: binary, lines: lines, samples: samples) } }.get()
    }

    private static func measure(bytes: Int, binary: String, lines: Int, samples: Int) throws -> [Figure] {
        let flood = ["head", "-c", String(bytes), "/dev/zero"]
        let daemon = try BenchDaemon(binary: binary, name: "output", actions: """
            flood: { exec: \(json(flood)) },
            stamp: { exec: ["sh", "-c", "i=0; while [ $i -lt \(lines) ]; do date +%s%N; sleep 0.01; i=$((i+1)); done"] },
            endless: { exec: ["cat", "/dev/zero"] },
            quick: { exec: ["/bin/true"], params: { k: {} }, keyParams: ["k"] },
            """)
        let rawBefore = try rawPipe(flood)
        let through = try daemon.timed(#"{"op":"trigger","action":"flood"}"#)
        let rawAfter = try rawPipe(flood)
        let raw = Double(bytes) / ((rawBefore + rawAfter) / 2)
        let waits = try followerLatency(daemon)
        let idle = try triggerLatency(daemon, samples: samples)
        let client = try BatondBench.connect(daemon.socket, until: .now + .seconds(5))
        // A flood with no end, cancelled once the samples are in: it outlasts them.
        guard let started = client.call(#"{"op":"trigger","action":"endless","detach":true}"#), let flooding = BatondBench.runID(started) else {
            throw BenchError("batond did not start the flood")
        }
        usleep(200_000)
        let busy = try triggerLatency(daemon, samples: samples)
        guard let cancelled = client.call(#"{"op":"cancel","run":\#(flooding)}"#), LineClient.contains(cancelled, #""phase":"loading""#) else {
            throw BenchError("the flood had ended before the samples did")
        }
        _ = client.call(#"{"op":"wait","run":\#(flooding)}"#)
        let megabytes = Double(bytes) / 1_048_576
        return [
            Figure("output through batond: \(Int(megabytes)) MiB of head -c, keep 16 MiB exceeded", Double(bytes) / through / 1_048_576, "MiB/s",
                   baseline: ("the same command's pipe read by this process", raw / 1_048_576)),
            Figure("output follower: a line's wait from the process's write to a follower (p50)", percentile(waits, 0.5) * 1_000, "ms",
                   target: "≤ 50 ms", note: "\(waits.count) lines, date +%s%N every 10 ms"),
            Figure("output follower: a line's wait (p99)", percentile(waits, 0.99) * 1_000, "ms", target: "≤ 50 ms"),
            Figure("trigger → end of /bin/true while another run floods output (p50)", percentile(busy, 0.5) * 1_000, "ms",
                   baseline: ("the same, idle (p50)", percentile(idle, 0.5) * 1_000), lowerIsBetter: true, target: "≥ 0.5 of idle",
                   note: String(format: "p99 %.2f ms against %.2f idle; cat /dev/zero flooding throughout",
                                percentile(busy, 0.99) * 1_000, percentile(idle, 0.99) * 1_000)),
        ]
    }

    private static func json(_ strings: [String]) -> String {
        "[" + strings.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
    }

    /// Seconds for this process to read everything `command` writes to a pipe.
    private static func rawPipe(_ command: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        let pipe = Pipe()
        process.standardOutput = pipe
        let watch = Stopwatch()
        try process.run()
        try? pipe.fileHandleForWriting.close()
        let fd = pipe.fileHandleForReading.fileDescriptor
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
        process.waitUntilExit()
        return watch.seconds
    }

    /// Follows a run printing its clock every 10 ms: for each line, when it arrived less when it was written.
    private static func followerLatency(_ daemon: BenchDaemon) throws -> [Double] {
        let client = try BatondBench.connect(daemon.socket, until: .now + .seconds(5))
        guard let started = client.call(#"{"op":"trigger","action":"stamp","detach":true}"#), let run = BatondBench.runID(started) else {
            throw BenchError("batond did not start the stamping run")
        }
        var waits: [Double] = []
        _ = client.call(#"{"op":"output","run":\#(run),"follow":true}"#) { event in
            let arrived = Date().timeIntervalSince1970
            guard let object = try? JSONSerialization.jsonObject(with: Data(event)) as? [String: Any],
                  let chunk = object["chunk"] as? [String: Any], let data = (chunk["data"] as? String).flatMap({ Data(base64Encoded: $0) }) else { return }
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
                if let written = Double(line) { waits.append(arrived - written / 1e9) }
            }
        }
        return waits
    }

    /// Trigger-to-end latencies of `/bin/true` runs, one at a time, each its own key.
    private static func triggerLatency(_ daemon: BenchDaemon, samples: Int) throws -> [Double] {
        let client = try BatondBench.connect(daemon.socket, until: .now + .seconds(5))
        return (0..<samples).map { index in
            let watch = Stopwatch()
            _ = client.call(#"{"op":"trigger","action":"quick","params":{"k":"\#(UUID().uuidString)-\#(index)"}}"#)
            return watch.seconds
        }
    }
}

/// A real batond on its own socket and database with these actions, stopped on deinit.
final class BenchDaemon {
    let directory: String
    let socket: String
    private let process = Process()

    init(binary: String, name: String, actions: String) throws {
        directory = scratchDirectory(name)
        socket = directory + "/baton.sock"
        let config = directory + "/baton.json5"
        try "{ retention: { maxRunsPerAction: 1000000 }, actions: { \(actions) } }".write(toFile: config, atomically: true, encoding: .utf8)
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--config", config, "--socket", socket, "--database", directory + "/history.sqlite"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        _ = try BatondBench.connect(socket, until: .now + .seconds(10))
    }

    /// Seconds from sending `request` to its final answer.
    func timed(_ request: String) throws -> Double {
        let client = try BatondBench.connect(socket, until: .now + .seconds(5))
        let watch = Stopwatch()
        guard let answer = client.call(request), LineClient.contains(answer, #""phase":"success""#) else {
            throw BenchError("batond did not answer \(request) with a success")
        }
        return watch.seconds
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
