/// The answer to a trigger: what was decided, the run, and its updates when the caller waits.
public struct Ticket: Sendable {
    public var decision: FlightTable.Decision
    public var run: RunSnapshot
    /// Every committed transition and progress report of the run, ending after its terminal one.
    public var updates: AsyncStream<RunUpdate>?

    public init(decision: FlightTable.Decision, run: RunSnapshot, updates: AsyncStream<RunUpdate>?) {
        self.decision = decision
        self.run = run
        self.updates = updates
    }

    /// Whether the trigger shares a run another trigger created.
    public var shared: Bool { decision.isShared }

    /// Waits for the run to end and returns its final snapshot (nil if the stream ended early).
    public func outcome() async -> RunSnapshot? {
        guard let updates else { return run.phase.isTerminal ? run : nil }
        var last: RunSnapshot?
        for await update in updates { last = update.run }
        return last?.phase.isTerminal == true ? last : nil
    }
}

/// A committed transition (or, with `transition` nil, a progress report or the current state) of a run.
public struct RunUpdate: Sendable, Equatable {
    public var run: RunSnapshot
    public var transition: Transition?

    public init(run: RunSnapshot, transition: Transition?) {
        self.run = run
        self.transition = transition
    }
}
