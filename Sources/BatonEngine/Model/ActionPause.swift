/// An action that refuses its triggers (`baton pause ACTION --reason …`, or `pauseAfterFailures`):
/// who paused it, why, since when and until when (nil: until `baton resume`). Durable: the history
/// keeps it, and a restart finds it (`RecoverableState.pauses`).
public struct ActionPause: Codable, Sendable, Equatable {
    public var action: String
    /// Who paused it: a user's name (`alice`, or `uid 1000` without one), or `pauseAfterFailures`.
    public var by: String
    public var reason: String
    public var at: Timestamp
    public var until: Timestamp?
    /// `baton pause --hold`: triggers are not refused but queued (single flight applies as ever),
    /// and their runs start, in trigger order, once the pause ends.
    public var hold: Bool

    public init(action: String, by: String, reason: String, at: Timestamp, until: Timestamp? = nil, hold: Bool = false) {
        self.action = action
        self.by = by
        self.reason = reason
        self.at = at
        self.until = until
        self.hold = hold
    }

    enum CodingKeys: String, CodingKey { case action, by, reason, at, until, hold }

    /// A pause written before `hold` existed (a hand-over from an older batond) refuses.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(action: try container.decode(String.self, forKey: .action), by: try container.decode(String.self, forKey: .by),
                  reason: try container.decode(String.self, forKey: .reason), at: try container.decode(Timestamp.self, forKey: .at),
                  until: try container.decodeIfPresent(Timestamp.self, forKey: .until),
                  hold: try container.decodeIfPresent(Bool.self, forKey: .hold) ?? false)
    }

    /// `hold` only where true, as the hand-written JSON says it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(action, forKey: .action)
        try container.encode(by, forKey: .by)
        try container.encode(reason, forKey: .reason)
        try container.encode(at, forKey: .at)
        try container.encodeIfPresent(until, forKey: .until)
        if hold { try container.encode(true, forKey: .hold) }
    }

    /// Who pauses an action by itself after failures in a row.
    public static let afterFailures = "pauseAfterFailures"

    /// `pauseAfterFailures: most`: the pause `streak` failures in a row make, the last `run`;
    /// nil while the streak is short of `most`, or while the action is `paused` already. (One
    /// machine counts the streak in its table, a fleet in its database: both decide here.)
    public static func afterFailures(streak: Int, most: Int, last run: RunSnapshot, paused: Bool, at now: Timestamp) -> ActionPause? {
        guard streak >= most, !paused else { return nil }
        let last = run.error.map { ": \($0)" } ?? ""
        return ActionPause(action: run.action, by: afterFailures, reason: "\(streak) failures in a row (the last, run \(run.id)\(last))", at: now)
    }

    /// Whether the pause still holds at `now`: always without an end, else until it.
    public func holds(at now: Timestamp) -> Bool { until.map { now < $0 } ?? true }

    /// A sentence for people: `deploy is paused by alice for 1h59m more: migrating db` (`is held`
    /// for a pause that queues its triggers).
    public func message(at now: Timestamp) -> String {
        let until = self.until.map { "for \(DurationText.format($0 - now)) more" } ?? "until resumed"
        return "\(action) is \(hold ? "held" : "paused") by \(by) \(until): \(reason)"
    }

    /// What a run this pause holds waits for: `held by pause (alice: migrating db) until resumed`,
    /// or `… for 1h59m more`.
    public func holding(at now: Timestamp) -> String {
        let until = self.until.map { "for \(DurationText.format($0 - now)) more" } ?? "until resumed"
        return "held by pause (\(by): \(reason)) \(until)"
    }

    /// Whether a trigger is refused now: the pause holds and does not queue (`hold`).
    public func refuses(at now: Timestamp) -> Bool { !hold && holds(at: now) }
}

/// A change to an action itself, as the history keeps it (`baton history --events`): a pause
/// (who, why, until when) or a resume (who), newest first when listed.
public struct ActionEvent: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case paused, resumed
    }

    public var action: String
    public var event: Kind
    /// Who: a user's name (`alice`, or `uid 1000`), or `pauseAfterFailures`.
    public var by: String
    /// A pause's reason.
    public var reason: String?
    public var at: Timestamp
    /// A pause's end (nil: until resumed).
    public var until: Timestamp?
    /// A pause that held its triggers (`pause --hold`): true, else nil (a row written before
    /// the history kept it reads as no hold).
    public var hold: Bool?

    public init(action: String, event: Kind, by: String, reason: String? = nil, at: Timestamp, until: Timestamp? = nil,
                hold: Bool = false) {
        self.action = action
        self.event = event
        self.by = by
        self.reason = reason
        self.at = at
        self.until = until
        self.hold = hold ? true : nil
    }

    /// `paused`, `paused (hold)` or `resumed`: what `history --events` says happened.
    public var what: String { event == .paused && hold == true ? "paused (hold)" : event.rawValue }
}
