/// One phase change of a run, as the history records it.
///
/// Its detail is held behind one reference, never changed in place (a change makes a new one): the
/// loop copies a transition into updates, effects, the journal's batch and answers many times a
/// run, and a copy is then a retain where the detail's 17 fields inline were a `memcpy` and the
/// retains of its strings and arrays (issue 39). A transition made without a detail shares one empty
/// storage; one made with `detail:` (the engine's, an empty detail included) has its own.
public struct Transition: Codable, Sendable, Equatable {
    public var runID: Int64
    /// 1 for the run's first transition, then +1 without gaps.
    public var seq: Int
    public var from: Phase?
    public var to: Phase
    public var at: Timestamp
    @usableFromInline var detailStorage: DetailStorage

    /// Why the transition happened and what came of it.
    @inlinable public var detail: TransitionDetail {
        get { detailStorage.detail }
        set { detailStorage = DetailStorage(newValue) }
    }

    public init(runID: Int64, seq: Int, from: Phase?, to: Phase, at: Timestamp, detail: TransitionDetail) {
        self.init(runID: runID, seq: seq, from: from, to: to, at: at, storage: DetailStorage(detail))
    }

    /// A transition with an empty detail (the shared one: nothing allocated).
    public init(runID: Int64, seq: Int, from: Phase?, to: Phase, at: Timestamp) {
        self.init(runID: runID, seq: seq, from: from, to: to, at: at, storage: DetailStorage.empty)
    }

    private init(runID: Int64, seq: Int, from: Phase?, to: Phase, at: Timestamp, storage: DetailStorage) {
        self.runID = runID
        self.seq = seq
        self.from = from
        self.to = to
        self.at = at
        detailStorage = storage
    }

    /// A detail behind a reference, never written: `Sendable` as the compiler checks it.
    @usableFromInline final class DetailStorage: Sendable {
        @usableFromInline let detail: TransitionDetail
        @usableFromInline init(_ detail: TransitionDetail) { self.detail = detail }
        static let empty = DetailStorage(TransitionDetail())
    }

    public static func == (lhs: Transition, rhs: Transition) -> Bool {
        lhs.runID == rhs.runID && lhs.seq == rhs.seq && lhs.from == rhs.from && lhs.to == rhs.to && lhs.at == rhs.at
            && (lhs.detailStorage === rhs.detailStorage || lhs.detail == rhs.detail)
    }

    private enum CodingKeys: String, CodingKey { case runID, seq, from, to, at, detail }

    // As the synthesized `Codable` of the plain fields wrote and read them.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        try self.init(
            runID: container.decode(Int64.self, forKey: .runID), seq: container.decode(Int.self, forKey: .seq),
            from: container.decodeIfPresent(Phase.self, forKey: .from), to: container.decode(Phase.self, forKey: .to),
            at: container.decode(Timestamp.self, forKey: .at), detail: container.decode(TransitionDetail.self, forKey: .detail))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(runID, forKey: .runID)
        try container.encode(seq, forKey: .seq)
        try container.encodeIfPresent(from, forKey: .from)
        try container.encode(to, forKey: .to)
        try container.encode(at, forKey: .at)
        try container.encode(detail, forKey: .detail)
    }
}

// `dump` and a failed `#expect` show the detail's fields, as they did for the struct, not its storage.
extension Transition: CustomReflectable {
    public var customMirror: Mirror {
        Mirror(self, children: ["runID": runID, "seq": seq, "from": from as Any, "to": to, "at": at, "detail": detail],
               displayStyle: .struct)
    }
}

/// Why a transition happened and what came of it; every field is optional.
public struct TransitionDetail: Codable, Sendable, Equatable {
    /// A short word: exit, timeout, cancelled, replaced, interrupted, shutdown, recovered, restarted.
    public var reason: String?
    /// The attempt the transition belongs to, from 1.
    public var attempt: Int?
    public var exitCode: Int32?
    public var signal: Int32?
    public var error: String?
    /// The uid that asked for the change (cancel).
    public var by: UInt32?
    /// The run that replaced this one, or the run this one replaced.
    public var replacedBy: Int64?
    public var replaces: [Int64]?
    /// The backoff before the next attempt, in microseconds.
    public var backoff: Int64?
    /// The process group of the attempt that started.
    public var pgid: Int32?
    /// How many processes the attempt's leader left behind (stopped before the run went on).
    public var leftovers: Int?
    /// The attempt's CPU time, user and system, in microseconds.
    public var cpuUser: Int64?
    public var cpuSystem: Int64?
    /// The attempt's largest memory, in bytes.
    public var memoryPeak: Int64?
    /// Where the trigger that created the run came from, when not the socket (a webhook).
    public var via: String?
    /// The locks the run took to start (its first `loading`), as the action's `locks` named them.
    public var locks: [String]?
    /// When a debounced run's window ends, in microseconds since the epoch, as its `queued`
    /// transition decided it (a later trigger of the burst may push it back, up to `maxWait`).
    public var debounce: Int64?

    public init(
        reason: String? = nil, attempt: Int? = nil, exitCode: Int32? = nil, signal: Int32? = nil,
        error: String? = nil, by: UInt32? = nil, replacedBy: Int64? = nil, replaces: [Int64]? = nil,
        backoff: Int64? = nil, pgid: Int32? = nil, leftovers: Int? = nil, usage: ResourceUsage? = nil
    ) {
        self.reason = reason
        self.attempt = attempt
        self.exitCode = exitCode
        self.signal = signal
        self.error = error
        self.by = by
        self.replacedBy = replacedBy
        self.replaces = replaces
        self.backoff = backoff
        self.pgid = pgid
        self.leftovers = leftovers
        cpuUser = usage?.cpuUser.microseconds
        cpuSystem = usage?.cpuSystem.microseconds
        memoryPeak = usage?.memoryPeak
    }
}

extension TransitionDetail {
    /// This detail with `via` naming who asked, where a uid alone does not (a group principal).
    func naming(_ principal: String?) -> TransitionDetail {
        var detail = self
        detail.via = principal ?? detail.via
        return detail
    }
}
