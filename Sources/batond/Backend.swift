import BatonCore
import BatonFleet
import BatonStore
import FoundationEssentials

/// Where batond keeps its history and decides single flight: one SQLite file, or a fleet on
/// PostgreSQL. The daemon sees only this: the conductor, who answers triggers, the history,
/// and what to do for retention, the watchdog and exit.
struct Backend {
    var conductor: Conductor
    var dispatcher: (any RunDispatcher)?
    var journal: any RunStore
    var history: any HistoryReader
    /// "database /var/lib/baton/history.db", or "fleet host web-1 on PostgreSQL".
    var describe: String
    /// How runs' processes are kept track of here.
    var tracking: ProcessTracking
    var prune: @Sendable (Config, Bool) async throws(BatonError) -> PruneReport
    var ping: @Sendable () async -> Void
    /// Stops the backend's own work and writes what is queued; returns how many writes were lost.
    var close: @Sendable () -> Int
    /// Stops logging its transitions (`logTransitions`, begun before recovery).
    var stopLog: Parts.Stop = {}
    /// Before the conductor drains at shutdown: a fleet host starts no more runs.
    var beginShutdown: @Sendable () -> Void = {}
    /// Run once batond listens: a fleet host joins the fleet (SQLite is ready at once).
    var connect: @Sendable () async -> Void = {}
    /// Before a reload's config is installed (off the loop): what its actions need is made
    /// ready, or it throws and the reload is refused (the key of secret params).
    var prepare: @Sendable ([Action]) throws -> Void = { _ in }
    /// After a reload took: a fleet host records its actions' new fingerprints.
    var reloaded: @Sendable ([Action]) async -> Void = { _ in }
    /// Where webhook delivery ids are looked up: the SQLite history, or the fleet's.
    var deliveries: WebhookListener.DeliveryStore?

    /// The SQLite history at `path`, recovered from an unclean stop.
    static func sqlite(_ config: Config, path: String, metrics: Metrics, reactor: Reactor,
                       migrating: (@Sendable (Int, String) -> Void)? = nil,
                       migrationNote: (@Sendable (Int, String) -> Void)? = nil,
                       searchIndex: (@Sendable (SearchIndex.Change) -> Void)? = nil,
                       logTransitions: (Conductor) -> Parts.Stop = { _ in {} }) async throws -> Backend {
        try Paths.ensureParent(of: path)
        var options = Store.Options(synchronous: config.synchronous, onProblem: { problem in
            if let problem { Log.error("the history cannot be written: \(problem); new triggers are refused meanwhile") }
            else { Log.info("the history can be written again") }
        })
        options.onCommit = { seconds, items, synced in metrics.committed(seconds: seconds, items: items, synced: synced) }
        options.willMigrate = migrating
        options.migrationNote = migrationNote
        options.searchIndex = config.search == .index
        options.willChangeSearchIndex = searchIndex
        let tracking = try Self.tracking(config, instance: path)
        let store = try Store(path: path, options: options)
        ExecRunner.adoptOrphans(on: reactor)
        Self.removeLeftHookOutputs(instance: path)
        // The daemon's spawner threads, passed down to its runner as the reactor is (no global pool).
        var runner = ExecRunner(reactor: reactor, spawner: SpawnerPool(threads: SpawnerPool.perCore))
        runner.tracking = tracking
        runner.shim = Self.shim(database: path)
        // Each attempt's `$BATON_ARTIFACTS` beside the database (`DATABASE-artifacts/RUN-ATTEMPT`), its files kept in the history.
        runner.artifacts = ArtifactSetup(directory: (path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path) + "-artifacts",
                                         keeper: StoreArtifacts(store: store))
                let secretKey = SecretParamKey(database: path, configured: config.secretsKey)
        try secretKey.prepare(for: config.actions)
        var conductorOptions = Conductor.Options(maxConcurrentRuns: config.maxConcurrentRuns, execRunner: runner, instance: path,
                                                 lineSink: config.journalSink)
        conductorOptions.sealer = secretKey.sealer
        // A planned stop leaves the runs that survive restarts to their shims, for the next batond
        // (a fleet host's keep today's grace-then-cancel: their keys are leased rows).
        conductorOptions.handsOver = true
        let conductor = Conductor(actions: config.actions, store: store, options: conductorOptions, reactor: reactor)
        // Logged from the first transition on: recovery's ends and the runs it starts again too.
        let stopLog = logTransitions(conductor)
        do throws(BatonError) {
            // Before recovery: a run it ends as interrupted fires its `change` hook against the run before it.
            try await seedOutcomes(store, actions: config.actions, conductor: conductor)
            // Before recovery too: a run it queues again starts only where its rate limit lets it.
            try await seedRateStarts(store, actions: config.actions, conductor: conductor)
            // Before recovery too: a run it ends as interrupted is a failure in a row, counted on
            // (`FailureStreak.end`), and the Nth pauses its action at once.
            try await seedFailureStreaks(store, actions: config.actions, conductor: conductor)
            let summary = await conductor.recover(try await store.recoverableState())
            var adoptedOnly = RecoverySummary()
            adoptedOnly.adopted = summary.adopted
            if summary == adoptedOnly && !summary.adopted.isEmpty {
                // A planned stop or restart left them: nothing was lost.
                Log.info("took over the runs the previous batond left: \(summary.adopted.count) adopted")
            } else if summary != RecoverySummary() {
                Log.warning("recovered after an unclean stop: \(summary.interrupted.count) interrupted, "
                    + "\(summary.restarted.count) restarted, \(summary.requeued.count) queued again, "
                    + "\(summary.dropped.count) dropped, \(summary.killedProcesses) leftover processes killed, \(summary.adopted.count) adopted")
            }
            conductor.remember(try await store.lastEnded(), durations: try await store.recentDurations(of: config.actions.map(\.name)))
            await seedDeadMan(store, actions: config.actions.map(\.name), metrics: metrics)
            try await seedCooldowns(store, actions: config.actions, conductor: conductor)
            try await seedSlots(store, actions: config.actions, conductor: conductor)
        } catch {
            await stopLog()
            store.close()
            throw DaemonError("cannot read the history to recover: \(error.message)")
        }
        var backend = Backend(conductor: conductor, dispatcher: nil, journal: store, history: store, describe: "database \(path)", tracking: tracking,
                              prune: { config, dryRun throws(BatonError) in try await Daemon.prune(store, config, dryRun: dryRun) },
                              ping: { await store.ping() }, close: { Self.close(store) })
        // A reload that adds the first secret param loads the key before its config is installed,
        // not at its first trigger (on the loop); a reload whose key cannot be had is refused.
        backend.prepare = { actions in try secretKey.prepare(for: actions) }
        backend.deliveries = WebhookListener.DeliveryStore { delivery, hook throws(BatonError) in
            try await store.run(ofDelivery: delivery, hook: hook)
        }
        backend.stopLog = stopLog
        return backend
    }
}

extension Backend {
    /// The tracking of runs' processes the config asks for, as this machine allows; logs why
    /// there are no cgroups when it falls back.
    static func tracking(_ config: Config, instance: String) throws -> ProcessTracking {
        let (tracking, note) = try Daemon.processTracking(config.processTree, instance: instance)
        if let note { Log.info(note) }
        let problems = config.limitProblems(tracking.limitSupport)
        if !problems.isEmpty {
            throw DaemonError("the config sets limits this machine cannot enforce:\n" + problems.map { "\($0.path): \($0.message)" }.joined(separator: "\n"))
        }
        return tracking
    }
}

/// A failure to start, with the message to log.
struct DaemonError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Backend {
    /// `baton-shim` beside batond (or in /usr/libexec/baton), its attempts' directories under a
    /// safe runtime directory (`$RUNTIME_DIRECTORY`, else /run/baton), their spools and the ends
    /// told once batond is gone beside the database (`DATABASE-shims`, a fleet host's
    /// `DATABASE-shims-HOST`; all of it there without a safe runtime directory): `ShimSetup.place`.
    /// Logged, as is its absence: without it, every action runs as if `survivesRestart: false`.
    static func shim(database: String, host: String? = nil, runtime: String? = Environment.value("RUNTIME_DIRECTORY")) -> ShimSetup? {
        guard let executable = ShimSetup.findExecutable() else {
            Log.warning("baton-shim is not beside batond nor in /usr/libexec/baton: runs do not survive a restart of batond")
            return nil
        }
        // An absolute path: the shim runs in the action's working directory.
        let absolute = database.hasPrefix("/") ? database : FileManager.default.currentDirectoryPath + "/" + database
        let shim = ShimSetup.place(executable: executable, database: absolute, host: host, runtime: runtime)
        // One line, its end the attempts' place (baton-bench reads it from "their shims' directories in ").
        Log.info("runs that survive restarts run under \(executable), their spools once batond is gone in \(shim.disk), "
            + "their shims' directories in \(shim.directory)")
        return shim
    }

    /// Removes the hook output files a crashed batond of this instance left, before any run starts.
    static func removeLeftHookOutputs(instance: String) {
        let removed = ExecRunner.removeLeftHookOutputs(instance: instance)
        if removed > 0 { Log.info("removed \(removed) hook output files a previous batond left") }
    }

    /// Closes the SQLite history, logging each transition it could not write: on a full disk at
    /// exit the next start's recovery ends those runs (`interrupted`), or queues them again; with
    /// the file deleted under batond, this line is all that is left of them.
    static func close(_ store: Store) -> Int {
        let unwritten = store.closeReporting()
        let after = unwritten.historyLost.map { "; \($0), so this line is its only record" } ?? "; the next start recovers the run"
        for transition in unwritten.transitions {
            let detail = [transition.detail.reason, transition.detail.error].compactMap { $0 }.joined(separator: ": ")
            Log.error("not written before exit: run \(transition.runID) \(transition.from?.rawValue ?? "-") → \(transition.to.rawValue)"
                + (detail.isEmpty ? "" : " (\(detail))") + after)
        }
        return unwritten.count
    }
}

