import BatonEngine
import FoundationEssentials

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
    /// Only runs past this id in the filter's order (older than it, or newer with `reverse`): where
    /// the next page of a long answer starts. Not on the wire: batond pages its own answers.
    public var after: Int64?

    /// The fields on the wire (`after` is batond's own).
    enum CodingKeys: String, CodingKey {
        case actions, phases, since, until, params, limit, reverse
    }

    public init(actions: [String] = [], phases: [Phase] = [], since: Timestamp? = nil, until: Timestamp? = nil,
                params: [String: String] = [:], limit: Int = 50, reverse: Bool = false, after: Int64? = nil) {
        self.actions = actions
        self.phases = phases
        self.since = since
        self.until = until
        self.params = params
        self.limit = limit
        self.reverse = reverse
        self.after = after
    }

    /// The most runs one query may ask for.
    public static let maxLimit = 100_000
    /// The most actions one filter may list, duplicates counted once.
    public static let maxActions = 1_000

    /// Every field is optional on the wire, with the defaults of `init`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(actions: try container.decodeIfPresent([String].self, forKey: .actions) ?? [],
                  phases: try container.decodeIfPresent([Phase].self, forKey: .phases) ?? [],
                  since: try container.decodeIfPresent(Timestamp.self, forKey: .since),
                  until: try container.decodeIfPresent(Timestamp.self, forKey: .until),
                  params: try container.decodeIfPresent([String: String].self, forKey: .params) ?? [:],
                  limit: try container.decodeWholeNumberIfPresent(Int.self, forKey: .limit, expected: "a whole number from 0 to \(Self.maxLimit)") ?? 50,
                  reverse: try container.decodeIfPresent(Bool.self, forKey: .reverse) ?? false)
    }

    /// The filter as a query runs it: `actions` and `phases` are sets, so each keeps its first
    /// appearance only (a query per distinct one, each run answered once). Refuses, naming the field
    /// and its cap, a filter no query should run: a limit out of range, a window that ends before it
    /// begins, more than `maxActions` actions or `Action.maxParams` params, a name longer than a
    /// config allows, a param value longer than a trigger may pass.
    public func validated() throws(BatonError) -> HistoryFilter {
        guard (0...Self.maxLimit).contains(limit) else {
            throw .badRequest("filter.limit must be from 0 to \(Self.maxLimit), got \(limit)")
        }
        if let since, let until, until < since {
            throw .badRequest("filter.until is before filter.since: the window is empty")
        }
        var filter = self
        filter.actions = actions.firstAppearances()
        filter.phases = phases.firstAppearances()
        guard filter.actions.count <= Self.maxActions else {
            throw .badRequest("filter.actions lists \(filter.actions.count) actions; at most \(Self.maxActions) (duplicates count once)")
        }
        if let long = filter.actions.first(where: { $0.utf8.count > Action.maxNameLength }) {
            throw .badRequest("filter.actions has a name of \(long.utf8.count) bytes; at most \(Action.maxNameLength)")
        }
        try Self.checkParams(params)
        return filter
    }

    private static func checkParams(_ params: [String: String]) throws(BatonError) {
        guard params.count <= Action.maxParams else {
            throw .badRequest("filter.params has \(params.count) entries; at most \(Action.maxParams)")
        }
        for (name, value) in params.sorted(by: { $0.key < $1.key }) {
            guard Action.isValidParamName(name) else {
                throw .badRequest("filter.params: \(Action.quoted(name)) is not a param name "
                    + "(letters, digits and '_', starting with a letter or '_', at most \(Action.maxNameLength))")
            }
            guard value.utf8.count <= Action.maxValueLength else {
                throw .badRequest("filter.params.\(name): the value is \(value.utf8.count) bytes; at most \(Action.maxValueLength)")
            }
        }
    }
}

extension Array where Element: Hashable {
    /// Each element once, where it first appears.
    func firstAppearances() -> [Element] {
        var seen = Set<Element>()
        return filter { seen.insert($0).inserted }
    }
}
