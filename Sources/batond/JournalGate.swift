import BatonCore

/// Keeps a run's output lines out of the journal until the `loading` line of the attempt that
/// wrote them has been logged: an attempt starts as soon as its `loading` transition is decided,
/// and writes at once, but that line is logged only once the transition is committed. Pure: the
/// sink holds it under its lock and sends what it returns.
///
/// Only attempts launched by this batond are held (an adopted run's `loading` line was logged by
/// the batond before). A run's held lines are bounded (`maxLines`, `maxBytes`): past that they are
/// dropped and counted, since sending them would put them before the line they must follow.
struct JournalGate: Sendable {
    /// What a line is to do now.
    enum Decision: Equatable, Sendable {
        case send
        case held
        case dropped
    }

    /// What may go to the journal now, in order, once a run's transition line is logged.
    struct Release: Equatable, Sendable {
        var lines: [OutputLine] = []
        /// Lines dropped while held: one entry says how many.
        var dropped = 0
    }

    /// One run this batond launched an attempt of.
    private struct Gate: Sendable {
        var launched = 0
        var logged = 0
        var held: [OutputLine] = []
        var heldBytes = 0
        var dropped = 0
        /// Released lines are being sent: lines that come meanwhile wait behind them.
        var releasing = false
    }

    let maxLines: Int
    let maxBytes: Int
    /// Gates kept before those holding nothing are let go: a run whose end the log never wrote
    /// (dropped while stderr was blocked) would otherwise keep its gate for good.
    let maxGates: Int
    private var gates: [Int64: Gate] = [:]

    init(maxLines: Int = 1_000, maxBytes: Int = 1 << 20, maxGates: Int = 10_000) {
        self.maxLines = maxLines
        self.maxBytes = maxBytes
        self.maxGates = maxGates
    }

    /// The run's attempt is starting: its lines wait for its `loading` line.
    mutating func launched(run: Int64, attempt: Int) {
        if gates.count >= maxGates, gates[run] == nil { gates = gates.filter { !$0.value.held.isEmpty } }
        gates[run, default: Gate()].launched = max(gates[run]?.launched ?? 0, attempt)
    }

    /// Whether a line goes now, waits, or is dropped (too many wait).
    mutating func line(_ line: OutputLine) -> Decision {
        guard var gate = gates[line.runID] else { return .send }
        defer { gates[line.runID] = gate }
        guard gate.releasing || (line.attempt > gate.logged && line.attempt <= gate.launched) else { return .send }
        guard gate.held.count < maxLines, gate.heldBytes + line.bytes.count <= maxBytes else {
            gate.dropped += 1
            return .dropped
        }
        gate.held.append(line)
        gate.heldBytes += line.bytes.count
        return .held
    }

    /// The run's `loading` line of `attempt` was logged: the lines of that attempt (and before) go.
    /// The caller sends them, then calls `released` until it returns nothing.
    mutating func logged(run: Int64, loading attempt: Int) -> Release {
        guard gates[run] != nil else { return Release() }
        gates[run]!.logged = max(gates[run]!.logged, attempt)
        return take(run)
    }

    /// What came while the last release was being sent; empty once the run's lines go straight through.
    mutating func released(run: Int64) -> Release {
        guard let gate = gates[run] else { return Release() }
        guard gate.held.isEmpty, gate.dropped == 0 else { return take(run) }
        gates[run]!.releasing = false
        return Release()
    }

    /// The run is about to end (its terminal line is next): whatever it held goes first, and the
    /// run is forgotten.
    mutating func ending(run: Int64) -> Release {
        guard let gate = gates.removeValue(forKey: run) else { return Release() }
        return Release(lines: gate.held, dropped: gate.dropped)
    }

    /// How many runs it keeps a gate for (bounded by the runs in flight).
    var count: Int { gates.count }

    private mutating func take(_ run: Int64) -> Release {
        var gate = gates[run]!
        // Attempts follow one another: held lines are in attempt order, the released ones first.
        let split = gate.held.firstIndex { $0.attempt > gate.logged } ?? gate.held.endIndex
        let release = Release(lines: Array(gate.held[..<split]), dropped: gate.dropped)
        gate.held.removeSubrange(..<split)
        gate.heldBytes = gate.held.reduce(0) { $0 + $1.bytes.count }
        gate.dropped = 0
        gate.releasing = !release.lines.isEmpty || release.dropped > 0
        gates[run] = gate
        return release
    }
}
