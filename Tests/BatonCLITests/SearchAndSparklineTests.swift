import BatonCore
@testable import baton
import Testing

/// What `baton search` prints for people, and `baton stats`' sparkline of recent durations.
@Suite("baton search's lines and stats' sparkline")
struct SearchAndSparklineTests {
    static let plain = Context(socketPath: "/tmp/none.sock", databasePath: nil, isTerminal: false, useColor: false)
    static let colour = Context(socketPath: "/tmp/none.sock", databasePath: nil, isTerminal: true, useColor: true)
    static let at = Timestamp(rawValue: 1_772_955_000_000_000)

    static func run(_ id: Int64, _ phase: Phase, params: [String: String] = [:]) -> RunSnapshot {
        RunSnapshot(id: id, action: "deploy", key: "deploy", phase: phase, policy: .reject, params: params, trigger: nil, queuedAt: at)
    }

    @Test("each run, then its lines numbered and aligned, the cut marked, what was left out counted; control characters escaped")
    func searchLines() {
        let matches = [
            SearchMatch(run: Self.run(12, .failure), lines: [MatchedLine(line: 9, text: "curl: Connection refused"),
                                                             MatchedLine(line: 120, text: "again connection refused\u{1B}[2J", afterCut: true)],
                        lineCount: 14),
            SearchMatch(run: Self.run(3, .success, params: ["host": "refused.example"]), params: ["host"]),
        ]
        let text = SearchCommand.render(matches, text: "connection refused", utc: true, context: Self.plain)
        #expect(text == """
            run 12  deploy  failure  \(Format.time(Self.at, utc: true))  14 lines
                9: curl: Connection refused
              … bytes dropped past output.keep …
              120: again connection refused\\e[2J
              … 12 more
            run 3  deploy  success  \(Format.time(Self.at, utc: true))  in params: host

            """, "\(text)")
        #expect(SearchCommand.render([], text: "x", utc: true, context: Self.plain) == "no runs match\n")
        // On a terminal the text is bold wherever it is, case ignored.
        #expect(SearchCommand.highlight("A Connection refused, connection REFUSED", "connection refused", Self.colour)
                == "A \u{1B}[1mConnection refused\u{1B}[0m, \u{1B}[1mconnection REFUSED\u{1B}[0m")
    }

    @Test("stats on a terminal: a RECENT column of blocks scaled to the longest, coloured by outcome; piped, no such column")
    func sparkline() {
        let recent = [ActionStats.Recent(id: 1, phase: .success, duration: 1_000_000), .init(id: 2, phase: .failure, duration: 8_000_000),
                      .init(id: 3, phase: .success, duration: 4_000_000), .init(id: 4, phase: .cancelled, duration: nil)]
        let stats = [ActionStats(action: "deploy", success: 2, failure: 1, cancelled: 1, recent: recent)]
        #expect(StatsCommand.sparkline(recent, context: Self.plain) == "▂█▅▁")
        #expect(StatsCommand.sparkline(recent, context: Self.colour)
                == "\u{1B}[32m▂\u{1B}[0m\u{1B}[31m█\u{1B}[0m\u{1B}[32m▅\u{1B}[0m\u{1B}[33m▁\u{1B}[0m")
        let piped = StatsCommand.table(stats, context: Self.plain, now: Self.at, width: nil)
        #expect(!piped.contains("RECENT") && !piped.contains("█"), "\(piped)")
        let terminal = StatsCommand.table(stats, context: Self.colour, now: Self.at, width: nil)
        #expect(terminal.contains("RECENT") && terminal.contains("█"), "\(terminal)")
    }
}
