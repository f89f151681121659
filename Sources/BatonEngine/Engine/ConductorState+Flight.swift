extension ConductorState {
    /// A run in flight: its machine, the snapshot the history has of it, and its live attempt.
    /// It stays until its terminal transition is durable, so late answers and waiters still find it.
    struct Flight: Sendable {
        /// The run as recorded: its phase is the last transition written, which every step leaves
        /// equal to `machine.phase` (the random-walk test checks it).
        var run: RunSnapshot
        var machine: RunMachine
        /// The definition the run started with; a reload does not change it.
        var action: Action
        var runner: RunnerBox?
        /// The seq of the last transition written.
        var seq: Int
        /// The attempt whose process or task is running, between `launch` and `exited`.
        var live: Int?
        /// Its live attempt's `loading` is being written: the process starts once that is durable.
        var launchWaits = false
        /// The wait chosen when the last failed attempt was recorded, for its `backoff` effect.
        var nextBackoff: Duration = .zero
        /// When progress was last told, and whether newer progress waits for the window's end.
        var progressToldAt: Timestamp?
        var progressHeld = false
        /// What a hook run is told of the run that fired it; nil for any other run.
        var hook: HookContext?
        /// The uid whose trigger made this run, followed back through the hooks and needs that
        /// made it (`ConductorState.origin(of:)`): who may not approve it. Nil for a schedule's.
        var origin: UInt32?
        /// The quiet window of a debounced run, from its creation until it starts; nil for others.
        var debounce: DebounceWindow?
        /// The values of the run's secret params, kept here only (in memory) for each attempt.
        var secrets: [String: String] = [:]
        /// The attempt a previous batond left running, attached to by the first launch.
        var surviving: SurvivingAttempt?
        /// At shutdown: its attempt is being left to its shim, or has been (`ConductorState+HandOver`).
        var handOver: HandOver?
        /// Left retrying by a previous batond: the bytes of output the history holds, for its next launch.
        var outputResumesAt: Int64?
        /// Whether its success is a sample of its action's duration: not once a reload has
        /// forgotten the action's estimate, since the run runs the definition that reload replaced.
        var measured = true

        /// A run put in flight at `seq` (its creation's, or the last its history holds): the
        /// recorded run carries that seq, as `record` leaves it after each transition, so the
        /// snapshots the flight answers with are its own fields, shared (issue 39).
        init(run: RunSnapshot, machine: RunMachine, action: Action, runner: RunnerBox?, seq: Int,
             hook: HookContext? = nil, debounce: DebounceWindow? = nil, secrets: [String: String] = [:]) {
            (self.run, self.machine, self.action, self.runner, self.seq) = (run, machine, action, runner, seq)
            (self.hook, self.debounce, self.secrets) = (hook, debounce, secrets)
            if run.seq != seq { self.run.seq = seq }
        }

        /// Whether the run's end is decided (its terminal transition may not be durable yet).
        var isOver: Bool { machine.phase.isTerminal }
        var snapshot: RunSnapshot {
            var snapshot = run
            // Shares the recorded fields where the seq is theirs already (`RunSnapshot` shares its fields until changed).
            if snapshot.seq != seq { snapshot.seq = seq }
            return snapshot
        }
    }
}
