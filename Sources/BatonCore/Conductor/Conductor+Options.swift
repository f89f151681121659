extension Conductor {
    /// What a conductor is built with.
    public struct Options: Sendable {
        /// The most runs loading or retrying at once, across all keys.
        public var maxConcurrentRuns: Int
        /// Starts the attempts of actions that run a process.
        public var execRunner: any Runner
        /// Seeds backoff jitter.
        public var seed: UInt64
        /// Names this conductor's history (batond: the database path). Processes of its runs carry it
        /// as `BATON_INSTANCE`, with `BATON_RUN_ID`, so that recovery finds them even when a crash
        /// came before their process group was recorded.
        public var instance: String?
        /// Watchers hear transitions from the fleet's feed (every host's, in commit order), not
        /// from this conductor as it commits them.
        public var watchersFedByFleet: Bool
        /// Told every line of every run's output besides the history (batond: the journal), or nil.
        public var lineSink: (any OutputLineSink)?
        /// A run's end hands its hooks to the store to decide (`ConductorState.storeDecidesHooks`): a fleet.
        public var storeDecidesHooks: Bool
        /// A run's failure is counted towards `pauseAfterFailures` by the store, over every host's
        /// runs (`ConductorState.storeCountsFailures`): a fleet.
        public var storeCountsFailures: Bool
        /// Hashes secret params' values for the keys of runs triggered in process (`Action.seal`); batond's.
        public var sealer: SecretSealer?
        /// A shutdown leaves the runs that survive restarts to their shims (`ConductorState.handsOver`): a host's batond.
        public var handsOver = false
        /// With `handsOver`: a shutdown also leaves the runs waiting to retry (`ConductorState.leavesRetrying`); not a fleet host.
        public var leavesRetrying = true
        /// A reload keeps the actions it replaces or removes (`Conductor.earlierActions(named:)`) until
        /// `forgetEarlier` drops them: a fleet, whose queued runs wait in rows, not in this conductor's
        /// flights, and start by the definition they were triggered with (only one this host loaded).
        public var keepsEarlierActions = false

        public init(maxConcurrentRuns: Int = Conductor.processorCount, execRunner: any Runner = ExecRunner(),
                    seed: UInt64 = UInt64.random(in: 0...UInt64.max), instance: String? = nil, watchersFedByFleet: Bool = false,
                    lineSink: (any OutputLineSink)? = nil, storeDecidesHooks: Bool = false, storeCountsFailures: Bool = false) {
            self.storeDecidesHooks = storeDecidesHooks
            self.storeCountsFailures = storeCountsFailures
            self.maxConcurrentRuns = maxConcurrentRuns
            self.execRunner = execRunner
            self.seed = seed
            self.instance = instance
            self.watchersFedByFleet = watchersFedByFleet
            self.lineSink = lineSink
        }
    }
}
