/// What a batond starting after another one (crashed, killed, or restarted on purpose) does with
/// one unfinished run, as a value (docs/architecture.md, "A run outlives batond"). The facts are
/// gathered by the conductor from the history, the config and the shim's directory; the decision
/// is pure, and table-tested (`ShimAdoptionTests`).
public enum ShimAdoption {
    /// What is known of one unfinished run's last attempt.
    public struct Facts: Sendable, Equatable {
        public var phase: Phase
        /// The action is still configured and survives restarts.
        public var survives: Bool
        /// The attempt's shim directory (`RUN-ATTEMPT`) is there.
        public var shimDirectory: Bool
        /// The leader the history recorded (the shim) is alive, its start time the recorded one.
        public var shimAlive: Bool
        /// The shim wrote `status`: the action ended while no batond watched.
        public var statusKept: Bool

        public init(phase: Phase, survives: Bool, shimDirectory: Bool, shimAlive: Bool, statusKept: Bool) {
            self.phase = phase
            self.survives = survives
            self.shimDirectory = shimDirectory
            self.shimAlive = shimAlive
            self.statusKept = statusKept
        }
    }

    public enum Decision: Sendable, Equatable {
        /// Recovered as before: its processes killed, then ended `interrupted`, restarted or queued again.
        case recover
        /// The run stays in flight (its key held): watched until the shim ends, then its status and spool read.
        case adopt
        /// The action ended meanwhile: its run ends from the status the shim kept (and its spool).
        case collect
    }

    public static func decide(_ facts: Facts) -> Decision {
        // Only a loading run has a process; queued and retrying ones have none to keep.
        guard facts.phase == .loading, facts.survives, facts.shimDirectory else { return .recover }
        if facts.shimAlive { return .adopt }
        return facts.statusKept ? .collect : .recover
    }
}

/// An unfinished run's surviving attempt, as recovery hands it to the conductor's state: where
/// its shim is and how much of its output the history already holds.
public struct SurvivingAttempt: Sendable, Equatable {
    public var attempt: Int
    /// The shim directory where it was found: under batond's runtime directory, or on the disk.
    public var directory: String
    /// The attempt's directory on the disk (`DATABASE-shims/RUN-ATTEMPT`), where its shim keeps its
    /// spool and a status written once batond is gone; `directory` itself where that is the disk's.
    public var disk: String
    /// The shim's pid (the attempt's leader and process group) and identity, as the history recorded them.
    public var pid: Int32
    public var identity: String
    /// Whether the shim still runs (`adopt`); false: it ended already and left its status (`collect`).
    public var alive: Bool
    /// Bytes of the run's output the history holds (its output continues from there).
    public var outputTotal: Int64

    public init(attempt: Int, directory: String, disk: String? = nil, pid: Int32, identity: String, alive: Bool, outputTotal: Int64) {
        self.attempt = attempt
        self.directory = directory
        self.disk = disk ?? directory
        self.pid = pid
        self.identity = identity
        self.alive = alive
        self.outputTotal = outputTotal
    }
}
