/// What the conductor asks of the history: write entries durably in order, and say what was
/// left in flight. `BatonStore.Store` keeps it in SQLite; `MemoryStore` keeps it in memory.
///
/// Entries are written in the order `enqueue` is called; `completion` runs once the entries
/// are durable (or failed), on whatever thread the store chooses.
public protocol RunStore: AnyObject, Sendable {
    /// Queues entries for writing in one transaction with others; calls `completion` when committed.
    func enqueue(_ entries: [JournalEntry], completion: @escaping @Sendable (Result<Void, BatonError>) -> Void)
    /// The state left by the previous daemon: the next free run id and the runs not yet ended.
    func recoverableState() async throws(BatonError) -> RecoverableState
    /// Why writes fail right now (new triggers are refused meanwhile), or nil when the store writes.
    var unavailableReason: String? { get }
}

extension RunStore {
    public var unavailableReason: String? { nil }
}

/// One write to the history.
public enum JournalEntry: Sendable, Equatable {
    /// A new run, with its first transition (to `queued`).
    case created(RunSnapshot, Transition)
    /// A phase change of an existing run; the run's row takes the new phase and outcome fields.
    case transition(Transition)
    /// A trigger that did not create a run: joined, coalesced or rejected.
    case trigger(TriggerRecord)
    /// The captured output of a run's last attempt.
    case output(runID: Int64, tail: [UInt8], truncated: Bool)
    /// Chunks of a run's whole output as it comes, bounded by its `output.keep` (`OutputLimiter`).
    case outputChunks(OutputWrite)
    /// The process group of the attempt that is starting, to be killed after a crash.
    case processGroup(runID: Int64, pgid: Int32, identity: String)
    /// A webhook delivery made (or joined) this run: written with the run's creation or the
    /// trigger record, in the same item. The first record of a delivery stays.
    case delivery(Delivery, runID: Int64, at: Timestamp)
    /// A run's end fires hooks the store decides (a fleet): in the item of that end, after it.
    case hooks(HookFiring)
    /// An action is paused (`baton pause`, or `pauseAfterFailures`): kept until resumed, and an event in the history.
    case pause(ActionPause)
    /// An action's pause is over: resumed by `by` (a user, or `pause ended` when its time ran out).
    case resume(action: String, by: String, at: Timestamp)
    /// A run waits for the runs it needs (`needs`), in its action's order: written in the item
    /// that creates it (or that takes it back after a restart, where none was kept).
    case needs(runID: Int64, needed: [NeededRun])
    /// A run's success or failure moves its action's failures in a row (`pauseAfterFailures`,
    /// `most`), which the store counts over every host's runs (a fleet:
    /// `ConductorState.storeCountsFailures`), pausing the action when they reach `most`
    /// (`FailureStreak.end`): in the item of that end, after it (the store hands the engine the
    /// run's row as that end wrote it, which says how it ended).
    case failureStreak(run: Int64, action: String, most: Int)
    /// A run's approval (`approve`): its wait, written in the item that creates it, then its
    /// decision (approved or denied by whom, why; or timed out), each replacing the last.
    case approval(runID: Int64, ApprovalState)
    /// The uid at a run's origin where it is not its own trigger's: whoever triggered the run
    /// that led to it, through hooks and needs (an approval's no-self rule refuses that uid after
    /// a restart too). Written in the item that creates the run.
    case origin(runID: Int64, uid: UInt32)
    /// A stop asked of a run whose attempt runs, that a restart must still know
    /// (`RunMachine.Stop.outlivesBatond`): written down as its process is told to stop, so that
    /// a batond started after a crash ends the run as the stop says instead of starting it again.
    case stopAsked(runID: Int64, RunMachine.Stop)
}

extension JournalEntry {
    /// Whether this is a run's terminal transition: an item with one is never refused, and the
    /// hook runs that end creates ride in it.
    public var isEnd: Bool {
        if case let .transition(transition) = self { transition.to.isTerminal } else { false }
    }

    /// Whether this entry matters only while the processes it names may live, and no answer waits
    /// for it: an attempt's process group (its leader's pid and identity), which a batond started
    /// after a crash of batond uses to kill or adopt what still runs. A crash of the machine takes
    /// those processes with it, so such an entry needs no flush to the disk of its own: one
    /// machine's store commits it at once without an `fdatasync` (in the kernel's page cache it
    /// outlives batond; the next synced commit makes it durable with itself). A fleet's writer
    /// sends it with its next transaction, or alone a second later (`FleetWriter.rideAtMost`): until
    /// then a crash of batond leaves the run without its leader in the rows, and it is not taken
    /// back. Its `loading`, which says the process may have run, is durable before the spawn.
    public var mattersOnlyToLiveProcesses: Bool {
        if case .processGroup = self { true } else { false }
    }
}

/// A trigger that hit an existing run.
public struct TriggerRecord: Codable, Sendable, Equatable {
    public var runID: Int64?
    public var action: String
    public var key: String
    public var decision: Decision
    public var policy: Policy
    public var peer: Peer?
    public var at: Timestamp
    public var params: [String: String]
    /// Where a trigger from beyond the socket came from, as a run it made would say it ("webhook
    /// gh from 203.0.113.7, delivery 72d3…", "the failure hook of deploy run 7"); nil for a peer's.
    public var via: String?

    public init(runID: Int64?, action: String, key: String, decision: Decision, policy: Policy, peer: Peer?, at: Timestamp,
                params: [String: String], via: String? = nil) {
        self.runID = runID
        self.action = action
        self.key = key
        self.decision = decision
        self.policy = policy
        self.peer = peer
        self.at = at
        self.params = params
        self.via = via
    }
}

extension TriggerRecord {
    /// What became of a trigger that did not create a run, as the history stores it.
    public enum Decision: Sendable, Hashable, Codable, CustomStringConvertible {
        /// `join`: it shares the run in flight.
        case joined
        /// `queue`: it shares the follow-up already waiting.
        case coalesced
        /// `reject`: the key was busy.
        case rejected
        /// `cooldown`: the key succeeded within the action's window; nothing ran.
        case cooled
        /// `--scheduled`: the slot already had a run, ended; nothing ran.
        case slotRan
        /// `debounce`: it joined the key's pending run and pushed its start back.
        case debounced
        /// The peer lacked the permission; the request did nothing.
        case denied(Permission)
        /// The action was paused: nothing ran, and the trigger was refused.
        case paused
        /// A scheduled slot while the action was paused: skipped, nothing ran.
        case skipped
        /// It would have made a run over the action's rate limit (`over: reject`): refused, nothing ran.
        case rateLimited
        /// An approve or deny of this run refused (not one of the approvers, or the run's own
        /// trigger without `self: true`): nothing was decided.
        case deniedApproval

        /// The stored text: `joined`, `coalesced`, `rejected`, `denied trigger`, …
        public var description: String {
            switch self {
            case .joined: "joined"
            case .coalesced: "coalesced"
            case .rejected: "rejected"
            case .cooled: "cooled"
            case .slotRan: "scheduled slot already ran"
            case .debounced: "debounced"
            case let .denied(permission): "denied \(permission.rawValue)"
            case .paused: "paused"
            case .skipped: "skipped (paused)"
            case .rateLimited: "rate limited"
            case .deniedApproval: "denied approval"
            }
        }

        /// Every stored text of a denial, for queries.
        public static var denials: [Decision] { Permission.allCases.map { .denied($0) } }

        /// What `history --denied` lists: the denials, and the triggers a rate limit refused.
        public static var refusals: [Decision] { denials + [.rateLimited, .deniedApproval] }

        public init?(_ text: String) {
            switch text {
            case "joined": self = .joined
            case "coalesced": self = .coalesced
            case "rejected": self = .rejected
            case "cooled": self = .cooled
            case "scheduled slot already ran": self = .slotRan
            case "debounced": self = .debounced
            case "paused": self = .paused
            case "skipped (paused)": self = .skipped
            case "rate limited": self = .rateLimited
            case "denied approval": self = .deniedApproval
            default:
                guard text.hasPrefix("denied "), let permission = Permission(rawValue: String(text.dropFirst(7))) else { return nil }
                self = .denied(permission)
            }
        }

        public init(from decoder: any Decoder) throws {
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let decision = Decision(text) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not a trigger decision: \(text)"))
            }
            self = decision
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(description)
        }
    }
}

/// What a new daemon finds in the history.
public struct RecoverableState: Sendable, Equatable {
    /// The id the next run takes: past every id ever used.
    public var nextRunID: Int64
    /// Runs not in a terminal phase, oldest first, with the seq of their last transition.
    public var unfinished: [UnfinishedRun]
    /// The actions paused when it stopped (their pauses may have ended since: the conductor checks).
    public var pauses: [ActionPause]

    public init(nextRunID: Int64, unfinished: [UnfinishedRun], pauses: [ActionPause] = []) {
        self.nextRunID = nextRunID
        self.unfinished = unfinished
        self.pauses = pauses
    }
}

/// A run a previous daemon left in flight.
public struct UnfinishedRun: Sendable, Equatable {
    public var run: RunSnapshot
    public var lastSeq: Int
    /// The process group of its last attempt and the identity of its leader, when recorded.
    public var pgid: Int32?
    public var pgidIdentity: String?
    /// Bytes of its output the history holds (`output_totals`), when known.
    public var outputTotal: Int64?
    /// What a hook run is told of the run that fired it (rebuilt from that run's row and output).
    public var hook: HookContext?
    /// The runs it waits for (`needs`), each with its phase as the history has it.
    public var needs: [NeededRun]?
    /// A run retrying: when its next attempt is due (its `retrying` transition's time and backoff), where the store knows.
    public var retryDue: Timestamp?
    /// The uid at its origin, where the history kept one (`JournalEntry.origin`).
    public var origin: UInt32?
    /// A run loading or retrying: the stop asked of it that its end has not recorded yet (its row's
    /// `stop`, `JournalEntry.stopAsked`; a replace's is also named by the replacing run's `queued`
    /// transition). It ends as the stop says, never started again.
    public var stop: RunMachine.Stop?

    public init(run: RunSnapshot, lastSeq: Int, pgid: Int32? = nil, pgidIdentity: String? = nil, hook: HookContext? = nil) {
        self.hook = hook
        self.run = run
        self.lastSeq = lastSeq
        self.pgid = pgid
        self.pgidIdentity = pgidIdentity
    }
}
