import BatonEngine

/// One run a `search` found: the run, the lines of its kept output that hold the text (the first
/// `SearchMatch.maxLines` of them, with their line numbers) and the params whose values hold it.
public struct SearchMatch: Codable, Sendable, Equatable {
    public var run: RunSnapshot
    /// The first matching lines, in order.
    public var lines: [MatchedLine]
    /// How many lines of the run's kept output hold the text (more than `lines` where cut).
    public var lineCount: Int
    /// The names of the params whose values hold the text; nil when none does.
    public var params: [String]?

    public init(run: RunSnapshot, lines: [MatchedLine] = [], lineCount: Int = 0, params: [String]? = nil) {
        self.run = run
        self.lines = lines
        self.lineCount = lineCount
        self.params = params
    }

    /// The most lines one run's match carries.
    public static let maxLines = 10
    /// The most runs one search answers.
    public static let maxRuns = 1_000
    /// The most bytes of a search's text.
    public static let maxText = 1_024
    /// The most bytes of kept output one search reads (scanning, without an index): past it the
    /// search answers what it found, saying where it stopped (`SearchCut`).
    public static let maxScannedBytes = 256 << 20
}

/// What a search answers: the runs found, and where it stopped when it stopped short.
public struct SearchResult: Sendable, Equatable {
    public var matches: [SearchMatch]
    public var cut: SearchCut?

    public init(matches: [SearchMatch], cut: SearchCut? = nil) {
        self.matches = matches
        self.cut = cut
    }
}

/// Where a search stopped that read its most bytes of output before it had read all it could:
/// the output of runs before `run` (and some of `run`'s) was not read; their params were.
public struct SearchCut: Codable, Sendable, Equatable {
    /// The bytes of output read.
    public var scannedBytes: Int64
    /// The run whose output was read last.
    public var run: Int64

    public init(scannedBytes: Int64, run: Int64) {
        self.scannedBytes = scannedBytes
        self.run = run
    }
}

/// A line of a run's output that holds the searched text.
public struct MatchedLine: Codable, Sendable, Equatable {
    /// Its number in the run's kept output, from 1. Where the run's output was cut past
    /// `output.keep`, the lines after the cut are counted from its end (`afterCut`).
    public var line: Int
    /// The line without its newline, as UTF-8 (invalid bytes replaced), at most `maxBytes` of it
    /// around the first match.
    public var text: String
    /// Whether bytes were dropped before this line (the run wrote more than it keeps).
    public var afterCut: Bool?

    public init(line: Int, text: String, afterCut: Bool? = nil) {
        self.line = line
        self.text = text
        self.afterCut = afterCut
    }

    /// The most bytes of a line a match carries.
    public static let maxBytes = 400
}
