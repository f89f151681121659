import BatonCore
import BatonIPC
import BatonService
import BatonStore
import Dispatch
import FoundationEssentials
import Glibc

/// batond from start to exit: config, store and recovery, socket, signals, graceful shutdown.
enum Daemon {
    /// Runs the daemon with its command-line arguments; returns the exit status.
    static func run(_ arguments: [String]) async -> Int32 {
        let options: DaemonOptions
        do {
            options = try DaemonOptions.parse(arguments)
        } catch {
            Log.error("\(error)\nTry: batond --help")
            return 2
        }
        if options.help { print(DaemonOptions.usage); return 0 }
        if options.version { print("batond \(BatonVersion.current)"); return 0 }
        if let file = options.checkConfig { return checkConfig(file) }

        guard let configPath = options.config ?? Paths.defaultConfig() else {
            Log.error("no config found\nTry: batond --config /etc/baton/baton.json5")
            return 1
        }
        let config: Config
        do {
            config = try Config.load(path: configPath)
        } catch {
            Log.error("the config is not valid:\n\(error)")
            return 1
        }
        for warning in config.warnings { Log.warning(warning) }
        // Found now, in the directory batond started in: a restart in place execs it (`Reexec`).
        _ = Reexec.executable
        umask(0o027)
        let parts = Parts()
        let status: Int32
        do {
            status = try await serve(Launch(config: config, configPath: configPath, options: options), parts)
        } catch {
            Log.error("\(error)")
            status = 1
        }
        await parts.stopAll()
        if status == 0 { Log.info(Reexec.isRequested ? "batond stopped; restarting in place" : "batond stopped") }
        return status
    }

    /// What `serve` starts from.
    struct Launch {
        var config: Config
        var configPath: String
        var options: DaemonOptions
        var socketPath: String { options.socket ?? config.socket ?? SocketPath.default() }
        var databasePath: String { options.database ?? config.database ?? DatabasePath.default() }
    }

    /// Starts batond's parts in order — the history, the socket, the request server, metrics, the
    /// journal, the reports to systemd, the fleet and retention — then serves until a stop signal
    /// has drained the runs. The caller stops the parts, in reverse, whether this returns or throws.
    static func serve(_ launch: Launch, _ parts: Parts) async throws -> Int32 {
        // SIGHUP is taken first: a reload asked while the parts start (the webhooks answer before
        // batond says ready) waits in the watcher's stream and is done once batond serves; its
        // default action would end the process, and ignoring it would lose the reload. SIGTERM
        // and SIGINT keep their default actions until the parts have started, so that a start
        // that hangs can still be stopped. SIGUSR2 is ignored from the start of main until the
        // watcher takes it here, once ready (main.swift): a restart asked meanwhile is not fatal.
        // The one event loop: every part below is handed it.
        let reactor = Reactor()
        let signals = SignalWatcher([SIGHUP], reactor: reactor)
        let notifier = Notifier()
        // The watchdog while batond starts (a long migration; the new image of a restart in
        // place, whose old one stopped pinging): pinged from now until the reports take over.
        let startingWatchdog = notifier.watchdogInterval.map { interval in
            Task.detached {
                while !Task.isCancelled {
                    notifier.watchdog()
                    try? await Task.sleep(for: interval)
                }
            }
        }
        defer { startingWatchdog?.cancel() }
        let metrics = Metrics()
        let backend = try await parts.start("history") { try await startBackend(launch, metrics: metrics, reactor: reactor, notifier: notifier) }
        let socket = try await parts.start("socket") { try listen(launch) }
        let configBox = ConfigBox(launch.config)
        let service = makeService(launch, backend, socket: socket, config: configBox, notifier: notifier, metrics: metrics)
        try await parts.start("server") { try startServer(launch.config, service, socket: socket) }
        try await parts.start("metrics") { try startMetrics(launch.config.metricsListen, service.service, reactor: reactor) }
        try await parts.start("webhooks") { try startWebhooks(launch.config, service, configBox, backend) }
        signals.take([SIGTERM, SIGINT, SIGUSR2])
        Log.info("batond \(BatonVersion.current) ready: \(launch.config.actions.count) actions, socket \(launch.socketPath), \(backend.describe)")
        notifier.ready(status: Self.status(of: backend.conductor))
        ScheduleRecord.keep(launch.config, path: launch.configPath)
        try await parts.start("journal") { backend.stopLog }
        try await parts.start("systemd") { startReports(notifier, backend) }
        startingWatchdog?.cancel()
        try await parts.start("fleet and retention") { startUpkeep(backend, configBox) }
        await waitForStop(signals, serving: service, backend: backend, config: configBox, notifier: notifier)
        return 0
    }

    /// The group that owns a file, or nil when it cannot be read.
    static func fileGroup(_ path: String) -> UInt32? {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_gid : nil
    }

    /// "2 loading, 1 queued", for systemd's STATUS=.
    static func status(of conductor: Conductor) -> String {
        let runs = conductor.inFlight()
        return Notifier.describe(loading: runs.count { $0.phase == .loading || $0.phase == .retrying },
                                 queued: runs.count { $0.phase == .queued })
    }

    /// Tells systemd what batond is doing when it changes, at most once a second.
    static func reportStatus(_ conductor: Conductor, to notifier: Notifier) async {
        guard notifier.socket != nil else { return }
        var last = status(of: conductor)
        while (try? await Task.sleep(for: .seconds(1))) != nil {
            let now = status(of: conductor)
            if now != last { notifier.status(now) }
            last = now
        }
    }

    /// Pings systemd's watchdog at half its timeout, but only after the conductor and the store
    /// writer have both answered: a hung actor or a writer stuck in SQLite stops the pings, and
    /// systemd restarts batond.
    static func feedWatchdog(_ notifier: Notifier, conductor: Conductor, backend: Backend) async {
        guard let interval = notifier.watchdogInterval else { return }
        while !Task.isCancelled {
            await conductor.ping()
            await backend.ping()
            notifier.watchdog()
            guard (try? await Task.sleep(for: interval)) != nil else { return }
        }
    }

    /// Applies retention at start and then every hour; a failed prune is logged and tried next time.
    static func pruneEveryHour(_ backend: Backend, _ config: ConfigBox) async {
        while !Task.isCancelled {
            do {
                let report = try await backend.prune(config.current, false)
                if report.total > 0 { Log.info("retention removed \(report.total) ended runs") }
            } catch {
                Log.warning("retention could not prune the history: \(error.message)")
            }
            guard (try? await Task.sleep(for: .seconds(3_600))) != nil else { return }
        }
    }

    /// Prunes the history as the config's retention (and each action's overrides) says.
    static func prune(_ store: Store, _ config: Config, dryRun: Bool) async throws(BatonError) -> PruneReport {
        var overrides: [String: Retention.Override] = [:]
        for action in config.actions { overrides[action.name] = action.retention }
        do {
            return try await store.prune(retention: config.retention, overrides: overrides, cooling: Retention.cooling(config.actions), dryRun: dryRun)
        } catch let error as BatonError {
            throw error
        } catch let error as DatabaseError {
            throw .storeUnavailable("cannot prune \(store.path): \(error.message)")
        } catch {
            throw .storeUnavailable("cannot prune \(store.path): \(error)")
        }
    }

    static func checkConfig(_ file: String) -> Int32 {
        do {
            let config = try Config.load(path: file)
            for warning in config.warnings { Stdio.error.write(Data("warning: \(warning)\n".utf8)) }
            let instance = config.fleet?.instance ?? config.database ?? DatabasePath.default()
            let (tracking, support) = describeTracking(config, instance: instance)
            let problems = config.limitProblems(support)
            if problems.isEmpty {
                let names = config.actions.map(\.name)
                print("\(file): ok, " + (names.isEmpty ? "no actions" : "\(names.count) action\(names.count == 1 ? "" : "s"): \(names.joined(separator: ", "))"))
            }
            print(tracking)
            print(support.description)
            let environment = ProcessInfo.processInfo.environment
            if let note = invocationNote(config.processTree, cgroup: ownCgroup(), inUnit: environment["INVOCATION_ID"] != nil) { print(note) }
            if !problems.isEmpty {
                Stdio.error.write(Data("\(ConfigError(file: file, problems: problems))\n".utf8))
                return 1
            }
            if let fleet = config.fleet { return checkFleet(fleet, actions: config.actions) }
            return 0
        } catch {
            Stdio.error.write(Data("\(error)\n".utf8))
            return 1
        }
    }

    /// Reads the config again; applies it whole and says what it warns of (each warning also
    /// logged), or refuses it whole and says why.
    /// `prepare` readies what the new actions need before they can be triggered (the key of
    /// secret params): where it cannot, the reload is refused and the old config kept.
    /// The new config's generation and the config box change together, in one turn of the loop
    /// (where the webhook listener reads the box and then the generation), and the reload returns
    /// once they have.
    static func reload(path: String, into service: Service, current: ConfigBox, socket: String, limits: LimitSupport,
                       prepare: ([Action]) throws -> Void = { _ in }) async -> ReloadOutcome {
        do throws(ConfigError) {
            let config = try Config.load(path: path)
            try config.checkLimits(limits, file: path)
            do { try prepare(config.actions) } catch { throw ConfigError(file: path, problems: [.init(path: "", message: "\(error)")]) }
            let generation = generation(config, socket: socket)
            let old = await withCheckedContinuation { (done: CheckedContinuation<Config, Never>) in
                service.update({ $0 = generation }, installed: { done.resume(returning: current.swap(config)) })
            }
            let warnings = config.warnings + restartWarnings(old: old, new: config, webhooksPassed: SocketActivation.passed.webhooks != nil)
            for warning in warnings { Log.warning(warning) }
            Log.info("reloaded \(path): \(config.actions.count) actions")
            return .applied(warnings: warnings)
        } catch {
            // One line per problem: `baton reload` shows each on a line of its own.
            return .refused(error.summary)
        }
    }

    /// The settings a reload cannot apply, changed between `old` and `new`: said, not silently kept.
    static func restartWarnings(old: Config, new config: Config, webhooksPassed: Bool) -> [String] {
        var warnings: [String] = []
        if old.socket != config.socket || old.database != config.database || old.socketMode != config.socketMode {
            warnings.append("socket and database settings change only at restart")
        }
        if old.secretsKey != config.secretsKey {
            warnings.append("secretsKey changes only at restart (the key secret params are hashed under is read once)")
        }
        if old.search != config.search {
            warnings.append("search changes only at restart (the store makes or drops its index when it opens)")
        }
        // On a socket systemd passed, `listen` only documents the address: nothing to move.
        if old.webhooks?.listen != config.webhooks?.listen && !webhooksPassed {
            warnings.append("webhooks.listen changes only at restart (the hooks themselves were reloaded)")
        }
        return warnings
    }

    /// What requests are served against: the config's actions, and its access rules with the
    /// socket file's group looked up once, not per request.
    static func generation(_ config: Config, socket: String) -> Generation {
        Generation(actions: config.actions, access: config.access(socketGroup: fileGroup(socket)), owner: geteuid())
    }

    static func groupID(_ name: String) throws -> gid_t {
        if let id = gid_t(name) { return id }
        guard let id = UserDatabase.groupID(name) else {
            throw ConfigError(file: "config", problems: [.init(path: "socketGroup", message: "no group named \(name)")])
        }
        return id
    }
}

/// The config in force, swapped whole on reload; guarded by its lock.
final class ConfigBox: Sendable {
    private let config: Locked<Config>

    init(_ config: Config) { self.config = Locked(config) }

    var current: Config { config.withLock { $0 } }

    func swap(_ new: Config) -> Config {
        config.withLock { config in
            let old = config
            config = new
            return old
        }
    }
}
