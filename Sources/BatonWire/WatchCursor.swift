import BatonEngine

/// Where a watch left off: the last transition its client saw (`after` on a `watch`), so that the
/// next watch (after a restart or a stop of batond) is first sent what was committed since.
/// Transitions are ordered by their time, then run and sequence: the history has no global
/// commit number (SQLite's transitions are keyed by run and sequence), but every store keeps
/// `at`, indexed, and one batond's transitions are stamped by one clock as it commits them.
public struct WatchCursor: Codable, Sendable, Hashable, Comparable {
    public var at: Timestamp
    public var run: Int64
    public var seq: Int

    public init(at: Timestamp, run: Int64, seq: Int) {
        self.at = at
        self.run = run
        self.seq = seq
    }

    /// The cursor just past `transition`.
    public init(_ transition: Transition) {
        self.init(at: transition.at, run: transition.runID, seq: transition.seq)
    }

    public static func < (a: WatchCursor, b: WatchCursor) -> Bool {
        (a.at, a.run, a.seq) < (b.at, b.run, b.seq)
    }

    enum CodingKeys: String, CodingKey { case at, run, seq }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        at = try container.decode(Timestamp.self, forKey: .at)
        guard let run = try container.decodeWholeNumberIfPresent(Int64.self, forKey: .run, expected: "a whole number"),
              let seq = try container.decodeWholeNumberIfPresent(Int.self, forKey: .seq, expected: "a whole number") else {
            throw DecodingError.dataCorruptedError(forKey: .run, in: container, debugDescription: "after needs at, run and seq")
        }
        (self.run, self.seq) = (run, seq)
    }
}

/// The transitions committed after a watch's cursor, oldest first, each with its run as the
/// history has it now; at most a bound of them: the newest, `skipped` saying how many older were left out.
public struct Replay: Sendable, Equatable {
    public var updates: [RunUpdate]
    public var skipped: Int

    public init(updates: [RunUpdate] = [], skipped: Int = 0) {
        self.updates = updates
        self.skipped = skipped
    }

    /// How many transitions a watch is sent again at most.
    public static let bound = 10_000
}
