/// A run as callers see it: its identity, phase and outcome so far.
///
/// A value, held as one reference to its fields, shared until changed: the loop copies a snapshot
/// into answers, updates, effects and followers many times per event, and a copy is a retain where
/// the fields would be about 400 bytes. The fields are never written: a change makes a new storage
/// (issue 39), so set several at once where it matters (`update`, `applying`) and only what differs.
public struct RunSnapshot: Sendable {
    @usableFromInline var storage: Storage

    public init(
        id: Int64, action: String, key: String, phase: Phase, policy: Policy, params: [String: String],
        trigger: Peer?, queuedAt: Timestamp, startedAt: Timestamp? = nil, endedAt: Timestamp? = nil,
        attempts: Int = 0, exitCode: Int32? = nil, signal: Int32? = nil, reason: String? = nil,
        error: String? = nil, progress: Progress? = nil, estimate: Int64? = nil
    ) {
        storage = Storage(Fields(
            id: id, action: action, key: key, phase: phase, policy: policy, params: params, trigger: trigger,
            queuedAt: queuedAt, startedAt: startedAt, endedAt: endedAt, attempts: attempts, exitCode: exitCode,
            signal: signal, reason: reason, error: error, progress: progress, estimate: estimate))
    }

    /// Whether the two hold the same fields (one was copied from the other, and neither changed
    /// since): then they are equal, without comparing a field. False says nothing.
    public func isTriviallyIdentical(to other: RunSnapshot) -> Bool { storage === other.storage }

    /// The run with a transition applied: phase, timestamps and outcome fields (one new storage).
    public func applying(_ transition: Transition) -> RunSnapshot {
        var run = storage.fields
        run.phase = transition.to
        run.seq = transition.seq
        let detail = transition.detail
        switch transition.to {
        case .queued:
            break
        case .loading:
            if run.startedAt == nil { run.startedAt = transition.at }
            run.attempts = detail.attempt ?? run.attempts + 1
        case .retrying:
            run.exitCode = detail.exitCode
            run.signal = detail.signal
            run.error = detail.error
            run.account(detail)
        case .success, .failure, .cancelled:
            run.account(detail)
            run.endedAt = transition.at
            run.exitCode = detail.exitCode ?? run.exitCode
            run.signal = detail.signal ?? run.signal
            run.reason = detail.reason
            // The end's own error: a run cancelled while it waited to retry is not its last attempt's failure.
            run.error = transition.to == .success ? nil : detail.error
            run.cancelledBy = transition.to == .cancelled ? detail.by : nil
            run.progress = nil
        }
        var applied = self
        applied.storage = Storage(run)
        return applied
    }

    /// Changes several fields in one go, with one new storage (setting them one after another
    /// makes one a field): for code that fills a run in (a row decoded, an answer read).
    @inlinable package mutating func update<Result>(_ body: (inout Fields) throws -> Result) rethrows -> Result {
        var fields = storage.fields
        let result = try body(&fields)
        storage = Storage(fields)
        return result
    }

    /// Adds an attempt's figures (from the detail of the transition that ended it) to the run's:
    /// CPU times add up, the memory peak is the larger. The store's row follows the same rule.
    public mutating func account(_ detail: TransitionDetail) {
        var fields = storage.fields
        fields.account(detail)
        storage = Storage(fields)
    }
}

extension RunSnapshot.Fields {
    mutating func account(_ detail: TransitionDetail) {
        if let user = detail.cpuUser { cpuUser = (cpuUser ?? 0) + user }
        if let system = detail.cpuSystem { cpuSystem = (cpuSystem ?? 0) + system }
        if let peak = detail.memoryPeak { memoryPeak = Swift.max(memoryPeak ?? peak, peak) }
    }
}

extension RunSnapshot: Equatable {
    public static func == (lhs: RunSnapshot, rhs: RunSnapshot) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }
}

// Reflected as its fields, as the struct that held them was: `dump`, a test's diff, and the
// wire tests that check every optional field is written (`WireJSONTests.everyFieldSet`).
extension RunSnapshot: CustomReflectable {
    public var customMirror: Mirror {
        Mirror(self, children: Mirror(reflecting: storage.fields).children, displayStyle: .struct)
    }
}

// `Codable` is the fields': the same keys, and a nil field left out (absent reads as nil), as
// the synthesized conformance of the struct with these stored properties wrote it.
extension RunSnapshot: Codable {
    public init(from decoder: any Decoder) throws {
        storage = Storage(try Fields(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try storage.fields.encode(to: encoder)
    }
}
