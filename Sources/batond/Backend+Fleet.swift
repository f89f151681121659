import BatonCore
import BatonFleet
import FoundationEssentials
import Glibc

extension Backend {
    /// One host of a fleet. Its `connect` (run once batond listens; triggers are refused with
    /// `store_unavailable` until it is done) waits for PostgreSQL, migrates, registers a new
    /// incarnation, kills and takes over what this host's previous start left, then renews the
    /// lease and follows the fleet's feed. `onFenced` runs if the lease is lost.
    /// `database` (the file a fleet host does not use) names where this host keeps its attempts'
    /// `$BATON_ARTIFACTS` directories: `DATABASE-artifacts-HOST/RUN-ATTEMPT`.
    static func fleet(_ config: Config, _ fleet: FleetConfig, database: String, metrics: Metrics, reactor: Reactor,
                      onFenced: @escaping @Sendable (String) -> Void, logTransitions: (Conductor) -> Parts.Stop = { _ in {} }) throws -> Backend {
        // libpq is opened here, not linked: a host without it says so now, not at its first query.
        try LibPQ.load()
        let host = FleetHost.starting(name: fleet.host, lease: fleet.lease)
        let pool = PGPool(conninfo: fleet.postgres, defaults: FleetStore.connectionDefaults(host: host.name, lease: fleet.lease))
        // Whether another host listens: a host alone sends its busiest commits no NOTIFY.
        let company = FleetCompany(host)
        let store = FleetStore(pool: pool, host: host, company: company, reactor: reactor, onProblem: { problem in
            if let problem { Log.error("the fleet's history cannot be written: \(problem); new triggers are refused meanwhile") }
            else { Log.info("the fleet's history can be written again") }
        }, onLost: { runs in
            Log.warning("runs \(runs.map(String.init).joined(separator: ", ")) were taken over by another host; their updates from here are dropped")
        })
        let instance = fleet.instance
        let tracking = try Self.tracking(config, instance: instance)
        ExecRunner.adoptOrphans(on: reactor)
        // The guard killed the runs of a batond that crashed: their hook output files are stale.
        Self.removeLeftHookOutputs(instance: instance)
        let guardLink = GuardLink(instance: instance, tracking: tracking, reactor: reactor)
        guardLink.start()
        // The daemon's spawner threads, passed down to its runner as the reactor is (no global pool).
        var runner = ExecRunner(reactor: reactor, spawner: SpawnerPool(threads: SpawnerPool.perCore))
        runner.tracking = tracking
        runner.beforeSpawn = { guardLink.ensureRunning() }
        // A keep that finds PostgreSQL down is tried again on the loop's timer (the run ends after it).
        let artifacts = FleetArtifacts(pool: pool, host: host, log: { Log.warning($0) }, reactor: reactor)
        runner.artifacts = Self.artifactSetup(config, database: database, host: host.name, keeper: artifacts)
        // Each attempt under a shim (its runtime place named after the database and the host, its disk's
        // `DATABASE-shims-HOST`), as on one host: a stop, a restart or a crash leaves its runs to them,
        // for this host's next start to take back within the lease.
        runner.shim = Self.shim(database: database, host: host.name)
        var options = Conductor.Options(maxConcurrentRuns: config.maxConcurrentRuns, execRunner: runner, instance: instance,
                                        watchersFedByFleet: true, lineSink: config.journalSink, storeDecidesHooks: true, storeCountsFailures: true)
        options.handsOver = true
        // A clean stop still cancels this host's runs waiting to retry (`shutdown`), unlike one
        // machine's: a crash leaves them, and the next start or a reaper resumes their backoff (its
        // due time is read from `transitions`: `FleetTakeBack.retryingRuns`), within the start slots.
        options.leavesRetrying = false
        // A run queued before a reload starts by the definition it was triggered with, its process
        // only from one this host loaded: the conductor keeps those a reload replaces (`FleetRunDefinitions`).
        options.keepsEarlierActions = true
        // Every host hashes secrets under the one key each holds (`secretsKey`, required with a
        // secret param; read at start, and at first use where a reload added one).
        if let path = config.secretsKey {
            let secretKey = SecretParamKey(shared: path)
            try secretKey.prepare(for: config.actions)
            options.sealer = secretKey.sealer
        }
        let conductor = Conductor(actions: config.actions, store: store, options: options, reactor: reactor)
        // Logged from the first transition on, before the fleet's recovery (`connect`).
        let stopLog = logTransitions(conductor)
        let coordinator = FleetCoordinator(host: host, pool: pool, conductor: conductor, limit: config.maxConcurrentRuns, reactor: reactor,
                                           company: company, log: { Log.warning($0) })
        // The transaction that writes a run's end starts the runs that may start then.
        store.startRuns(with: coordinator)
        metrics.follow { [counts = coordinator.feedCounts] in counts.figures }
        let lease = FleetLease(coordinator, onFenced: { why in
            guardLink.handOver()
            onFenced(why)
        }, onArmed: { guardLink.renewed(until: $0) }, onReleased: { guardLink.released() })
        let feed = WriteOnce<FeedBox>()
        store.waiting("waiting for PostgreSQL to answer")
        let connect: @Sendable () async -> Void = {
            // The actions as of now: a reload while PostgreSQL was awaited counts.
            let (adopted, instances) = await Self.join(store, pool, lease, host: host, instance: instance, tracking: tracking, conductor: conductor,
                                                       fingerprints: FleetDefinitions.fingerprints(conductor.configuredActions()))
            // Nothing of this start runs yet: its cgroups, shim and artifacts directories but the
            // adopted runs' go, and the adopted runs are in flight again, watched by their shims.
            let summary = await conductor.recover(RecoverableState(nextRunID: 0, unfinished: adopted))
            // The guards of previous starts wait for their lease's deadline before they kill by this
            // host's instance: ended before any run of this start begins (and its adopted runs are
            // spared), found by the tags those starts recorded (the connection string may have changed).
            await guardLink.endPrevious(instances: instances)
            if !adopted.isEmpty {
                Log.info("took back \(summary.adopted.count) runs this host's previous start left to their shims within its lease")
            }
            lease.start()
            // What crashes left unpublished (this host's previous starts are gone now), where this
            // host keeps artifacts: else no keeper connection opens (a reload that adds them
            // sweeps at its first keep), and the log says so.
            if config.actions.contains(where: { $0.artifactsKeep != nil }) {
                artifacts.sweep()
            } else {
                Log.info("no action keeps artifacts: no artifact sweep at start")
            }
            let following = await coordinator.startFeed()
            feed.set(FeedBox(handle: following))
            if let last = try? await store.lastEnded() { conductor.remember(last) }
            await seedDeadMan(store, actions: conductor.configuredActions().map(\.name), metrics: metrics)
            store.waiting(nil)
            Log.info("joined the fleet as \(host.name) (\(host.incarnation))")
            // `search: "index"`: the trigram index, made once by one host (it may take a while; output goes on meanwhile).
            if config.search == .index { Task { await store.makeSearchIndex(log: { Log.info($0) }) } }
        }
        var backend = Backend(conductor: conductor, dispatcher: coordinator, journal: store, history: store,
                       describe: "fleet host \(host.name) (\(host.incarnation)) on PostgreSQL", tracking: tracking,
                       prune: { config, dryRun throws(BatonError) in
                           var overrides: [String: Retention.Override] = [:]
                           for action in config.actions { overrides[action.name] = action.retention }
                           return try await store.prune(retention: config.retention, overrides: overrides,
                                                                     cooling: Retention.cooling(config.actions), dryRun: dryRun)
                       },
                       ping: {}, close: {
                           feed.value?.handle.stop()
                           let lost = store.close()
                           artifacts.close(timeout: .seconds(1))
                           lease.stop(clean: true)
                           return lost
                       }, beginShutdown: {
                           coordinator.stopStarting()
                           // A keep waiting for PostgreSQL gives up now: the drain does not wait out its retries.
                           artifacts.stopRetrying()
                       }, connect: connect,
                       reloaded: { actions in await Self.publish(FleetDefinitions.fingerprints(actions), host: host, pool: pool) })
        // The fleet's deliveries, whichever host took them: a redelivery to another host gets the first run.
        backend.deliveries = WebhookListener.DeliveryStore { delivery, hook throws(BatonError) in
            try await store.run(ofDelivery: delivery, hook: hook)
        }
        backend.stopLog = stopLog
        return backend
    }

    /// Each attempt's `$BATON_ARTIFACTS` on this host (`DATABASE-artifacts-HOST/RUN-ATTEMPT`), its
    /// files kept in PostgreSQL by `keeper`, where every host serves them. The directories a
    /// previous start left go at `Conductor.recover`, but those of the runs taken back. Named
    /// by host: two hosts of a fleet on one machine with the same `--database` never remove each
    /// other's live directories.
    static func artifactSetup(_ config: Config, database: String, host: String, keeper: FleetArtifacts) -> ArtifactSetup {
        let absolute = database.hasPrefix("/") ? database : FileManager.default.currentDirectoryPath + "/" + database
        if config.actions.contains(where: { $0.artifactsKeep != nil }) { try? Paths.ensureParent(of: absolute) }
        return ArtifactSetup(directory: absolute + "-artifacts-" + host, keeper: keeper)
    }

    /// Records a reloaded config's fingerprints (before this host joined, no row has them yet:
    /// the join records them) and warns of the actions another live host defines otherwise.
    private static func publish(_ fingerprints: [String: String], host: FleetHost, pool: PGPool) async {
        do {
            let mismatches = try await pool.run { db in
                try FleetDefinitions.record(fingerprints, incarnation: host.incarnation, on: db)
                return FleetDefinitions.mismatches(mine: fingerprints, others: try FleetDefinitions.liveHosts(except: host.name, on: db))
            }
            for mismatch in mismatches { Log.warning("\(mismatch); make the hosts' configs agree") }
        } catch {
            Log.warning("cannot record the fingerprints of the reloaded actions on PostgreSQL: \(error)")
        }
    }

    /// Migrates, registers this incarnation and takes over what this host's previous start left,
    /// trying again with growing pauses while PostgreSQL does not answer (saying why each time).
    /// It also records the fingerprints of this host's actions, and warns of each action another
    /// live host defines otherwise.
    private static func join(_ store: FleetStore, _ pool: PGPool, _ lease: FleetLease, host: FleetHost, instance: String,
                             tracking: ProcessTracking, conductor: Conductor, fingerprints: [String: String]) async -> ([UnfinishedRun], Set<String>) {
        var pause = Duration.milliseconds(200)
        while true {
            do {
                let (recovered, mismatches) = try await pool.run { db -> (FleetLease.Recovered, [FleetDefinitions.Mismatch]) in
                    try FleetSchema.migrate(db)
                    try lease.register(instance: instance, on: db)
                    try FleetDefinitions.record(fingerprints, incarnation: host.incarnation, on: db)
                    let others = try FleetDefinitions.liveHosts(except: host.name, on: db)
                    // Nothing of this start runs yet: whatever its cgroups hold, a previous start left.
                    // Those of previous starts with another tag are in their own subtrees, beside this one.
                    let killCgroups = { (spared: [UnfinishedRun], others: Set<String>) -> Int in
                        guard case let .cgroup(hierarchy) = tracking else { return 0 }
                        let base = hierarchy.directory[..<(hierarchy.directory.lastIndex(of: "/") ?? hierarchy.directory.endIndex)]
                        return others.sorted().reduce(hierarchy.removeAll(except: Set(spared.map { "run-\($0.run.id)-\($0.run.attempts)" }))) {
                            $0 + CgroupHierarchy(directory: base + "/" + CgroupHierarchy.subtreeName(instance: $1)).removeAll()
                        }
                    }
                    return (try lease.recoverOwnHost(instance: instance, adoptable: conductor.mayAdopt, killCgroups: killCgroups, on: db),
                            FleetDefinitions.mismatches(mine: fingerprints, others: others))
                }
                for mismatch in mismatches { Log.warning("\(mismatch); make the hosts' configs agree") }
                if !recovered.runs.isEmpty {
                    Log.warning("took over \(recovered.runs.count) runs this host left unfinished: \(recovered.adopted.count) taken back, "
                        + "\(recovered.requeued) queued again, \(recovered.killed) leftover processes killed")
                }
                return (recovered.adopted, recovered.instances)
            } catch {
                store.waiting("waiting for PostgreSQL: \(error)")
                Log.error("cannot join the fleet on PostgreSQL (\(error)); trying again in \(DurationText.format(pause))")
                try? await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(10))
            }
        }
    }
}

extension Daemon {
    /// A fenced host starts over: the same binary and arguments, in the same process (systemd
    /// keeps tracking it), so that it registers a new incarnation once PostgreSQL answers and
    /// takes over what its fenced start left, as after a crash.
    static func restartAfterFence(_ why: String) -> Never {
        Log.error("fenced (\(why)): starting over with a new incarnation")
        var none = sigset_t()
        sigemptyset(&none)
        pthread_sigmask(SIG_SETMASK, &none, nil)
        let arguments = CommandLine.arguments
        let argv = arguments.map { strdup($0) } + [nil]
        execv("/proc/self/exe", argv)
        Log.error("cannot start over: \(String(cString: strerror(errno))); exiting")
        exit(70)
    }
}

extension Daemon {
    /// `--check-config` with `postgres`: connects as batond would and says what it found.
    static func checkFleet(_ fleet: FleetConfig, actions: [Action]) -> Int32 {
        do {
            let db = try PGConnection(fleet.postgres, defaults: FleetStore.connectionDefaults(host: fleet.host, lease: fleet.lease))
            let version = try db.query("SHOW server_version").first?[0] ?? "?"
            let exists = try db.query("SELECT to_regclass('baton_schema') IS NOT NULL").first?[0] == "t"
            let schema = exists ? try db.query("SELECT coalesce(max(version), 0) FROM baton_schema").first?[0] ?? "0" : "0 (empty database)"
            print("postgres: ok, PostgreSQL \(version), fleet schema version \(schema) (this batond knows \(FleetSchema.latestVersion)); host \(fleet.host), lease \(DurationText.format(fleet.lease))")
            // Warnings, not errors: a fleet changing its config host by host differs for a while.
            if (Int(schema) ?? 0) >= 3 {
                let mismatches = FleetDefinitions.mismatches(mine: FleetDefinitions.fingerprints(actions),
                                                             others: try FleetDefinitions.liveHosts(except: fleet.host, on: db))
                for mismatch in mismatches { print("warning: \(mismatch)") }
            }
            return 0
        } catch {
            Stdio.error.write(Data("postgres: cannot connect: \(error)\n".utf8))
            return 1
        }
    }
}

/// The fleet's feed, once followed: set once by `connect`, read at close.
private final class FeedBox: Sendable {
    let handle: FleetFeedHandle
    init(handle: FleetFeedHandle) { self.handle = handle }
}
