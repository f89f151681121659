import BatonCore

/// What the coordinator itself decides, as one value: this host's start slots (the most runs it
/// runs at once, counting the slots granted to transactions that may start a run), whether it
/// still starts runs, the runs it handed to its conductor, its debounced runs' timers, the one
/// look for startable runs at a time, and the fleet's runs in flight as the feed last read them.
/// `handle(event) -> [effect]`; owned by the loop (`FleetCoordinator.state`), which performs the
/// effects. PostgreSQL's workers never read it: a transaction is granted its slots on the loop
/// before it is submitted, and its completion comes back to the loop as an event (`settled`).
struct CoordinatorState: Sendable {
    /// The most runs this host runs at once.
    let limit: Int
    private(set) var accepting = true
    /// Start slots granted to transactions in flight, and to claimed runs until the conductor
    /// counts them (`counted`).
    private(set) var reserved = 0
    /// Retrying runs moved here that wait for a slot to resume (`FleetCoordinator.hand`): they
    /// have the first claim on a slot that frees, as one machine's retrying run keeps its own
    /// (no other start takes one of these; the next sweep's `reserveToResume` does).
    private(set) var waitingToResume = 0
    /// Runs this host's conductor runs, with the seq of the transition that started them.
    private(set) var adopted: [Int64: Int] = [:]
    /// This host's debounced runs that a timer will wake it for, one timer per run at most.
    private(set) var debouncing: Set<Int64> = []
    /// Whether a look for startable runs is in flight, and whether another was asked meanwhile.
    private(set) var looking = false
    private(set) var lookAgain = false
    /// Whether a look was refused, or found ready runs, with no slot free: the next slot a
    /// transaction gives back starts one (else a queued run would wait for the feed's next tick).
    private(set) var lookWhenFree = false
    /// Every host's runs in flight, as the feed last read them.
    private(set) var fleetInFlight: [Int64: RunSnapshot] = [:]
    /// When (the loop's clock) the last catch-up of the feed that succeeded began: every transition
    /// committed before it was delivered to the loop. Nil before the first.
    private(set) var caughtUpAt: ContinuousClock.Instant?
    /// The secret params' values of this host's runs that have not started (`keep`), in memory
    /// only: handed to the conductor with the run when it starts here, dropped when it ends.
    private(set) var secrets: [Int64: [String: String]] = [:]
    /// The runs whose needs this host asks (`FleetCoordinator.askNeeds`): one asked at a time; each
    /// kept, once written, with when, until a tick that read the rows after it (`needsRead`).
    private(set) var needsAsked = NeedsAsked()

    init(limit: Int) {
        self.limit = max(limit, 1)
    }

    enum Event: Sendable {
        /// A transaction that may start up to `wanted` runs asks for start slots, with `running`
        /// runs loading or retrying in the conductor.
        case reserve(wanted: Int, running: Int)
        /// The sweep of retrying runs moved here asks for slots to resume `wanted` of them (the
        /// slots kept for them included), `waiting` being those it found: a slot freed goes to them first.
        case reserveToResume(wanted: Int, running: Int, waiting: Int)
        /// A transaction that was granted `granted` slots ended: `claimed` runs (committed) go
        /// to the conductor, each keeping its slot until counted; the other slots come back.
        case settled(granted: Int, claimed: [FleetCoordinator.Claimed])
        /// A trigger made run `run`, not started yet, with secret params' values.
        case keep(Int64, secrets: [String: String])
        /// The conductor counts a handed run among its running ones: its slot comes back.
        case counted
        /// Asks for a look at what may start (a feed's tick, a debounce timer).
        case look(running: Int)
        /// The look found these runs ready to start (`held`: those a lock's line holds back).
        case found(ready: [Int64], held: [Int64], running: Int)
        /// The look in flight ended, having been granted `granted` slots and claimed `claimed`.
        case looked(granted: Int, claimed: [FleetCoordinator.Claimed], running: Int)
        /// A debounced run of this host may be due after `after`.
        case debounce(Int64, after: Duration)
        /// Its timer fired.
        case debounceFired(Int64, running: Int)
        /// Shutdown: no run starts here any more.
        case stopStarting
        /// The feed read every run in flight (`refresh`).
        case refreshed([RunSnapshot])
        /// The feed's refresh found these runs in flight new or changed, and these gone, since
        /// the last (`HandedRuns`: every other run is as the loop holds it).
        case refreshedChanges(changed: [RunSnapshot], gone: [Int64])
        /// The feed delivered a transition of a run (as it was then).
        case delivered(RunSnapshot, ended: Bool)
        /// A catch-up of the feed begun at `at` (the loop's clock) succeeded; its transitions were delivered before.
        case caughtUp(at: ContinuousClock.Instant)
        /// A tick read the runs whose needs to ask, its read begun at `readAt`: the runs whose
        /// needs were written before it are forgotten (it saw them written).
        case needsRead(readAt: ContinuousClock.Instant)
        /// Asks the run's needs (those of its definition, nil where this host has none for it),
        /// unless they are being asked or were written since the last read.
        case askNeeds(RunSnapshot, definition: Action?)
        /// Its needs could not be asked now, nothing written: the next tick asks them again.
        case needsNotAsked(Int64)
        /// Its needs were written (committed) at `at`.
        case needsWritten(Int64, at: ContinuousClock.Instant)
    }

    enum Effect: Sendable, Equatable {
        /// Slots granted to the transaction that asked (`reserve`); zero when none is free.
        case granted(Int)
        /// Hand this run to the conductor (its claim committed).
        case hand(FleetCoordinator.Claimed)
        /// Read which of this host's queued runs may start, on the pool (no slot held meanwhile).
        case findReady
        /// Start those runs, with `slots` start slots granted, on the pool.
        case start(ready: [Int64], held: [Int64], slots: Int)
        /// Arm the run's debounce timer.
        case armTimer(Int64, after: Duration)
        /// Ask the run's needs, its definition's (trigger each, then write what it waits for).
        case askNeeds(RunSnapshot, definition: Action?)
    }

    mutating func handle(_ event: Event) -> [Effect] {
        switch event {
        case let .reserve(wanted, running):
            return [.granted(take(wanted, running: running))]
        case let .reserveToResume(wanted, running, waiting):
            let granted = take(wanted, running: running, keeping: 0)
            waitingToResume = max(waiting - granted, 0)
            return [.granted(granted)]
        case let .settled(granted, claimed):
            return settle(granted: granted, claimed: claimed)
        case let .keep(run, values):
            if !values.isEmpty { secrets[run] = values }
            return []
        case .counted:
            reserved = max(reserved - 1, 0)
            return []
        case let .look(running):
            return look(running: running)
        case let .found(ready, held, running):
            let slots = ready.isEmpty ? 0 : take(ready.count, running: running)
            guard slots == 0 else { return [.start(ready: ready, held: held, slots: slots)] }
            if !ready.isEmpty { lookWhenFree = true }
            return lookEnded(running: running)
        case let .looked(granted, claimed, running):
            let effects = settle(granted: granted, claimed: claimed)
            return effects + lookEnded(running: running)
        case let .debounce(id, after):
            guard accepting, debouncing.insert(id).inserted else { return [] }
            return [.armTimer(id, after: max(after, .zero) + .milliseconds(1))]
        case let .debounceFired(id, running):
            debouncing.remove(id)
            return look(running: running)
        case .stopStarting:
            accepting = false
            return []
        case let .refreshed(runs):
            fleetInFlight = Dictionary(runs.map { ($0.id, $0) }, uniquingKeysWith: { _, last in last })
            return []
        case let .refreshedChanges(changed, gone):
            for id in gone { fleetInFlight[id] = nil }
            for run in changed { fleetInFlight[run.id] = run }
            return []
        case let .delivered(run, ended):
            fleetInFlight[run.id] = ended ? nil : run
            if ended { adopted[run.id] = nil }
            // Only its end: its `loading` may come by the feed before the start's claim reaches the loop.
            if ended { secrets[run.id] = nil }
            return []
        case let .caughtUp(at):
            caughtUpAt = max(caughtUpAt ?? at, at)
            return []
        case let .needsRead(readAt):
            needsAsked.prune(writtenBefore: readAt)
            return []
        case let .askNeeds(run, definition):
            return needsAsked.begin(run.id) ? [.askNeeds(run, definition: definition)] : []
        case let .needsNotAsked(run):
            needsAsked.forget(run)
            return []
        case let .needsWritten(run, at):
            needsAsked.written(run, at: at)
            return []
        }
    }

    /// How recent the feed's last catch-up must be for a follower to rely on the table (`followable`).
    static let fresh = Duration.seconds(2)

    /// Whether the feed caught up within `fresh` of `now`: a run the table lists in flight then
    /// either is, or its end is still to be delivered by a feed that works. A feed whose catch-up
    /// keeps failing leaves the table frozen, listing runs that ended meanwhile.
    func fed(at now: ContinuousClock.Instant) -> Bool {
        guard let caughtUpAt else { return false }
        return now - caughtUpAt <= Self.fresh
    }

    /// The run as the table holds it, with its seq, when a follower may follow it from this copy
    /// with no read (`FleetCoordinator.attach`): listed in flight, and the feed `fed`. Every
    /// transition after that seq is still to be delivered (the table changes only by the feed's
    /// deliveries and refreshes, in the order the feed reads them).
    func followable(_ id: Int64, at now: ContinuousClock.Instant) -> (RunSnapshot, seq: Int)? {
        guard let known = fleetInFlight[id], let seq = known.seq, !known.phase.isTerminal, fed(at: now) else { return nil }
        return (known, seq)
    }

    /// Whether a follower registered at `seq` after a read of the run must read back what may
    /// have been delivered before it was registered: unless the feed `fed` and the table says
    /// nothing after `seq` was delivered yet (it lists the run at or before `seq`).
    func readsBack(_ id: Int64, after seq: Int, at now: ContinuousClock.Instant) -> Bool {
        guard let known = fleetInFlight[id]?.seq, fed(at: now) else { return true }
        return known > seq
    }

    /// Takes up to `wanted` start slots if this host accepts and its runs loading or retrying
    /// plus the slots already reserved stay under the limit, `keeping` free (by default, those of
    /// the moved runs waiting to resume).
    private mutating func take(_ wanted: Int, running: Int, keeping: Int? = nil) -> Int {
        guard accepting else { return 0 }
        let granted = max(min(wanted, limit - running - reserved - (keeping ?? waitingToResume)), 0)
        reserved += granted
        return granted
    }

    private mutating func settle(granted: Int, claimed: [FleetCoordinator.Claimed]) -> [Effect] {
        // Each claimed run keeps its slot until the conductor counts it; the rest come back.
        let returned = max(granted - claimed.count, 0)
        reserved = max(reserved - returned, 0)
        for run in claimed { adopted[run.run.id] = run.seq }
        // A run starting here takes its secrets' values with it (a run this host never had them
        // for starts without: the conductor ends it, saying so).
        var effects = claimed.map { run -> Effect in
            var run = run
            if let values = secrets.removeValue(forKey: run.run.id) { run.secrets = values }
            return .hand(run)
        }
        // A look that wanted a slot gets one now (one in flight asks again as it ends).
        if returned > 0, lookWhenFree, accepting, !looking {
            lookWhenFree = false
            looking = true
            effects.append(.findReady)
        }
        return effects
    }

    /// One look at a time, and none while no slot is free: a look asked while one is in flight
    /// runs once that one ends (it may have read the runs before the ones that asked for it were
    /// committed). A look holds no slot while it reads what may start, only while it starts it.
    private mutating func look(running: Int) -> [Effect] {
        guard accepting else { return [] }
        if looking {
            lookAgain = true
            return []
        }
        guard limit - running - reserved - waitingToResume > 0 else {
            lookWhenFree = true
            return []
        }
        looking = true
        return [.findReady]
    }

    private mutating func lookEnded(running: Int) -> [Effect] {
        looking = false
        guard lookAgain else { return [] }
        lookAgain = false
        return look(running: running)
    }
}
