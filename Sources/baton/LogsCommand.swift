import BatonClient
import BatonCore
import FoundationEssentials
import Glibc

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
            OptionSpec(long: "since", short: nil, value: "WHEN", help: "only output that arrived since WHEN: 30m, 2h, today, 2026-11-01T14:00:30"),
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
        var since: Timestamp?
        if let text = arguments.value("since") {
            do { since = try TimeText.parse(text) } catch { throw UsageError("baton logs: --since \(error)") }
        }
        let run = try Int64(target).map { $0 } ?? latestRun(of: target, context)
        var last: UInt8?
        let end = try follow(run, from: 0, follow: arguments.flag("follow"), only: OutputSelection(stream: stream, since: since), context, last: &last)
        return arguments.flag("follow") ? ExitCode.of(end.phase) : ExitCode.success
    }

    /// The id of ACTION's latest run.
    static func latestRun(of action: String, _ context: Context) throws -> Int64 {
        let runs = try context.call { try await $0.history(HistoryFilter(actions: [action], limit: 1)) }
        guard let run = runs.first else {
            throw Failure(code: ExitCode.usage, message: "\(Terminal.visible(action)) has no runs", hint: "baton run \(Terminal.visible(action))")
        }
        return run.id
    }

    /// Prints the run's output from `from` (with `follow`, until it ends), resuming where the last
    /// chunk ended if the connection drops; returns the run as the last answer has it.
    static func follow(_ run: Int64, from: Int64, follow: Bool, stream: StandardStream?, _ context: Context) throws -> RunSnapshot {
        var last: UInt8?
        return try Self.follow(run, from: from, follow: follow, only: OutputSelection(stream: stream), context, last: &last)
    }

    /// As above, telling the last byte printed (so that a line after it starts on a line of its own).
    static func follow(_ run: Int64, from: Int64, follow: Bool, only selection: OutputSelection, _ context: Context,
                       last: inout UInt8?) throws -> RunSnapshot {
        // The read's place survives a lost connection: the next read resumes from it.
        var place = Place(next: from, last: last)
        var reconnect = Reconnect()
        while true {
            let before = place.next
            do {
                let end = try context.call(carrying: &place) { client, place in
                    let output = client.output(run: run, from: place.next, follow: follow)
                    return try await place.write(output, only: selection)
                }
                last = place.last
                return end
            } catch let failure as Failure where failure.code == ExitCode.unavailable {
                // batond went (a restart, or it closed a client whose unread answers passed the
                // connection's limit, as a long history read can): resume from the last byte printed.
                last = place.last
                if place.next > before || failure.refusal?.endedByRestart == true { reconnect.reached() }
                guard reconnect.again() else {
                    var gone = failure
                    gone.message = Reconnect.gone(socket: context.socketPath, failure.message)
                    throw gone
                }
            }
        }
    }

    /// Where a read of a run's output is: the position after the last chunk read, and the last byte printed.
    struct Place {
        var next: Int64
        var last: UInt8?
    }

    /// Says on stderr where bytes were dropped (stdout stays the bytes kept, byte for byte).
    static func markGap(_ dropped: Int64) {
        Stdio.error.write(Data(gapLine(dropped).utf8))
    }

    /// `baton: 23,068,672 bytes dropped here (past output.keep: the head and the tail are kept)`.
    static func gapLine(_ dropped: Int64) -> String {
        "\nbaton: \(dropped) bytes (\(Format.bytes(dropped))) dropped here: past output.keep the history keeps the head and the tail\n"
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

extension LogsCommand.Place {
    /// Prints the chunks of `output` past the place (only `stream`'s, if given) as they come,
    /// moving the place along; returns the run as the final answer has it.
    mutating func write(_ output: RunOutput, only selection: OutputSelection) async throws -> RunSnapshot {
        for try await chunk in output.chunks {
            let (bytes, gap) = advance(past: chunk, only: selection)
            if gap > 0 { LogsCommand.markGap(gap) }
            if let bytes { LogsCommand.write(bytes) }
        }
        return try await output.end.run
    }

    /// Moves the place past `chunk`: the bytes of it to print (nil: none), and how many bytes the
    /// history dropped before it.
    private mutating func advance(past chunk: OutputChunk, only selection: OutputSelection) -> (bytes: [UInt8]?, gap: Int64) {
        guard chunk.end > next else { return (nil, 0) }
        // A chunk starting past the last one's end: the history dropped what was between (output.keep).
        let gap = next > 0 ? max(chunk.start - next, 0) : 0
        defer { next = chunk.end }
        guard selection.wants(chunk) else { return (nil, gap) }
        let bytes = Array(chunk.bytes.suffix(Int(chunk.end - max(next, chunk.start))))
        last = bytes.last ?? last
        return (bytes, gap)
    }
}

/// Which chunks of a run's output `baton logs` prints: of one stream, or both; those that
/// arrived at or after `since` (a chunk's time is its first byte's, so to about 50 ms), or all.
struct OutputSelection: Equatable {
    var stream: StandardStream?
    var since: Timestamp?

    func wants(_ chunk: OutputChunk) -> Bool {
        (stream == nil || chunk.stream == stream) && (since.map { chunk.at >= $0 } ?? true)
    }
}
