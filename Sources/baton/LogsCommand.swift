import BatonCore
import BatonIPC
import Foundation

/// `baton logs RUN|ACTION`: print a run's output as it wrote it; `-f` follows it to its end.
enum LogsCommand {
    static let spec = CommandSpec(
        name: "logs",
        abstract: """
            Print the output of RUN, or of ACTION's latest run, byte for byte as it wrote it. With -f, follow it \
            until the run ends and exit with its outcome code, as baton wait does.
            """,
        arguments: "RUN|ACTION",
        options: [
            OptionSpec(long: "follow", short: "f", value: nil, help: "follow the output live until the run ends"),
            OptionSpec(long: "stream", short: nil, value: "STREAM", help: "only stdout or only stderr"),
        ],
        run: run)

    static func run(_ arguments: ParsedArguments, _ context: Context) throws -> Int32 {
        guard arguments.positionals.count == 1, let target = arguments.positionals.first else {
            throw UsageError("baton logs needs one RUN id or ACTION")
        }
        var stream: StandardStream?
        if let name = arguments.value("stream") {
            guard let value = StandardStream(rawValue: name) else { throw UsageError("baton logs: --stream expects stdout or stderr, got \(name)") }
            stream = value
        }
        let run = try Int64(target).map { $0 } ?? latestRun(of: target, context)
        let end = try follow(run, from: 0, follow: arguments.flag("follow"), stream: stream, context)
        return arguments.flag("follow") ? ExitCode.of(end.phase) : ExitCode.success
    }

    /// The id of ACTION's latest run.
    static func latestRun(of action: String, _ context: Context) throws -> Int64 {
        let response = try context.call(Request(op: .history, filter: HistoryFilter(actions: [action], limit: 1)))
        guard let run = response.runs?.first else {
            throw Failure(code: ExitCode.usage, message: "\(Terminal.visible(action)) has no runs", hint: "baton run \(Terminal.visible(action))")
        }
        return run.id
    }

    /// How many times in a row a follow reconnects after losing batond, and the pause between.
    static let reconnects = 50
    static let reconnectPause: useconds_t = 200_000

    /// Prints the run's output from `from` (with `follow`, until it ends), resuming where the last
    /// chunk ended if the connection drops; returns the run as the last answer has it.
    static func follow(_ run: Int64, from: Int64, follow: Bool, stream: StandardStream?, _ context: Context) throws -> RunSnapshot {
        var last: UInt8?
        return try Self.follow(run, from: from, follow: follow, stream: stream, context, last: &last)
    }

    /// As above, telling the last byte printed (so that a line after it starts on a line of its own).
    static func follow(_ run: Int64, from: Int64, follow: Bool, stream: StandardStream?, _ context: Context,
                       last: inout UInt8?) throws -> RunSnapshot {
        var next = from
        var lost = 0
        while true {
            do {
                let response = try context.call(Request(op: .output, run: run, from: next, follow: follow)) { event in
                    guard let chunk = event.chunk, chunk.end > next else { return }
                    lost = 0
                    if stream == nil || chunk.stream == stream {
                        let bytes = Array(chunk.bytes.suffix(Int(chunk.end - max(next, chunk.start))))
                        write(bytes)
                        last = bytes.last ?? last
                    }
                    next = chunk.end
                }
                guard let snapshot = response.run else { throw Failure(code: ExitCode.software, message: "batond answered without a run") }
                return snapshot
            } catch let failure as Failure where failure.code == ExitCode.unavailable && lost < reconnects {
                // batond went (a restart, or it closed a client whose unread answers passed the
                // connection's limit, as a long history read can): resume from the last byte printed.
                lost += 1
                usleep(reconnectPause)
            }
        }
    }

    /// Writes bytes to stdout as they are, at once (a follower sees each chunk when it comes).
    static func write(_ bytes: [UInt8]) {
        var rest = bytes[...]
        while !rest.isEmpty {
            let n = rest.withUnsafeBytes { Glibc.write(1, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            rest = rest.dropFirst(n)
        }
    }
}
