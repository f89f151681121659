import Foundation

/// Which runs a history query returns.
public struct HistoryFilter: Codable, Sendable, Equatable {
    /// Runs of any of these actions (all when empty).
    public var actions: [String]
    /// Runs in any of these phases (all when empty).
    public var phases: [Phase]
    /// Runs queued at or after this time.
    public var since: Timestamp?
    /// Runs queued before this time.
    public var until: Timestamp?
    /// Runs whose params have all these values.
    public var params: [String: String]
    /// At most this many runs.
    public var limit: Int
    /// Oldest first instead of newest first.
    public var reverse: Bool

    public init(actions: [String] = [], phases: [Phase] = [], since: Timestamp? = nil, until: Timestamp? = nil,
                params: [String: String] = [:], limit: Int = 50, reverse: Bool = false) {
        self.actions = actions
        self.phases = phases
        self.since = since
        self.until = until
        self.params = params
        self.limit = limit
        self.reverse = reverse
    }

    /// The most runs one query may ask for.
    public static let maxLimit = 100_000

    /// Every field is optional on the wire, with the defaults of `init`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(actions: try container.decodeIfPresent([String].self, forKey: .actions) ?? [],
                  phases: try container.decodeIfPresent([Phase].self, forKey: .phases) ?? [],
                  since: try container.decodeIfPresent(Timestamp.self, forKey: .since),
                  until: try container.decodeIfPresent(Timestamp.self, forKey: .until),
                  params: try container.decodeIfPresent([String: String].self, forKey: .params) ?? [:],
                  limit: try container.decodeIfPresent(Int.self, forKey: .limit) ?? 50,
                  reverse: try container.decodeIfPresent(Bool.self, forKey: .reverse) ?? false)
    }

    /// Refuses a filter no query should run: a limit out of range, or a window that ends before it begins.
    public func validate() throws(BatonError) {
        guard (0...Self.maxLimit).contains(limit) else {
            throw .badRequest("filter.limit must be from 0 to \(Self.maxLimit), got \(limit)")
        }
        if let since, let until, until < since {
            throw .badRequest("filter.until is before filter.since: the window is empty")
        }
    }
}
