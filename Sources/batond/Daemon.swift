import BatonCore
import BatonIPC
import BatonService
import BatonStore
import Dispatch
import Foundation

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
        umask(0o027)
        let notifier = Notifier()
        let socketPath = options.socket ?? config.socket ?? SocketPath.default()
        let databasePath = options.database ?? config.database ?? DatabasePath.default()

        let metrics = Metrics()
        let backend: Backend
        do {
            if let fleet = config.fleet {
                backend = try Backend.fleet(config, fleet, metrics: metrics, onFenced: { why in Self.restartAfterFence(why) })
            } else {
                backend = try await Backend.sqlite(config, path: databasePath, metrics: metrics)
            }
        } catch {
            Log.error("\(error)")
            return 1
        }
        let conductor = backend.conductor

        let listenFD: Int32
        let ownsSocket: Bool
        do {
            if let passed = SocketActivation.passedSocket() {
                listenFD = passed
                ownsSocket = false
            } else {
                try Paths.ensureParent(of: socketPath, mode: 0o755)
                let group = try config.socketGroup.map { try Self.groupID($0) }
                listenFD = try UnixSocket.listen(path: socketPath, mode: config.socketMode, group: group)
                ownsSocket = true
            }
        } catch {
            Log.error("cannot listen on \(socketPath): \(error)")
            _ = backend.close()
            if case let .cgroup(hierarchy) = backend.tracking { rmdir(hierarchy.directory) }
            return 1
        }

        let configBox = ConfigBox(config)
        // The path clients connect to: ours, or the one systemd bound for us.
        let boundPath = ownsSocket ? socketPath : (UnixSocket.boundPath(of: listenFD) ?? socketPath)
        let reload: @Sendable (Service) async -> String? = { service in
            notifier.reloading()
            let problem = Self.reload(path: configPath, into: service, current: configBox, socket: boundPath)
            notifier.ready(status: Self.status(of: conductor))
            return problem
        }
        let serverBox = Locked<Server?>(nil)
        let handler = Service(conductor: conductor, dispatcher: backend.dispatcher, history: backend.history, journal: backend.journal,
                              generation: Self.generation(config, socket: boundPath),
                              hooks: Service.Hooks(reload: reload, prune: { dryRun throws(BatonError) in
                                  try await backend.prune(configBox.current, dryRun)
                              }, connections: { serverBox.withLock { $0?.connectionCount ?? 0 } }), metrics: metrics,
                              processTree: backend.tracking.description)
        let server: Server
        do {
            server = try Server(listening: listenFD, limits: Server.Limits(maxConnections: Self.openFileRoom(for: config), maxConnectionsPerUser: config.maxConnectionsPerUser,
                                                                           requestTimeout: config.requestTimeout), delegate: handler)
        } catch {
            Log.error("\(error)")
            return 1
        }
        serverBox.withLock { $0 = server }
        let http: HTTPServer?
        do {
            http = try Self.serveMetrics(config.metricsListen, handler)
        } catch {
            Log.error("cannot serve metrics on \(config.metricsListen.map(\.description) ?? ""): \(error)")
            return 1
        }

        let signals = SignalWatcher([SIGTERM, SIGINT, SIGHUP])
        Log.info("batond \(BatonVersion.current) ready: \(config.actions.count) actions, socket \(socketPath), \(backend.describe)")

        notifier.ready(status: Self.status(of: conductor))
        let journal = TransitionLog()
        conductor.observe { update in
            guard let update else { return }
            journal.append(update)
            // In a fleet every host's transitions come by; this host counts the runs it ran.
            if update.transition?.to.isTerminal == true, update.run.host == nil || update.run.host == config.fleet?.host {
                metrics.runEnded(update.run)
            }
        }
        let statusReports = Task { await Self.reportStatus(conductor, to: notifier) }
        let watchdog = Task { await Self.feedWatchdog(notifier, conductor: conductor, backend: backend) }
        async let serving: Void = server.run()
        let joining = Task { await backend.connect() }
        let retention = Task {
            await joining.value
            await Self.pruneEveryHour(backend, configBox)
        }
        var shutdown: Task<Void, Never>?
        for await signal in signals.stream {
            if signal == SIGHUP {
                if let problem = await reload(handler) {
                    Log.error("reload refused, keeping the old config:\n\(problem)")
                }
                continue
            }
            if shutdown != nil {
                Log.info("second stop signal: cancelling the runs in flight now")
                conductor.stopRemaining()
                continue
            }
            notifier.stopping()
            let grace = configBox.current.shutdownGrace
            Log.info("stopping: no new triggers; runs in flight have \(DurationText.format(grace)) to finish")
            shutdown = Task {
                backend.beginShutdown()
                await conductor.shutdown(grace: grace)
                signals.finish()
            }
        }
        await shutdown?.value
        joining.cancel()
        http?.stop()
        server.stop()
        await serving
        journal.close()
        retention.cancel()
        statusReports.cancel()
        watchdog.cancel()
        let lost = backend.close()
        // Every run has ended: the runs' cgroup subtree is empty, and goes with batond.
        if case let .cgroup(hierarchy) = backend.tracking { rmdir(hierarchy.directory) }
        if ownsSocket { unlink(socketPath) }
        if lost > 0 { Log.error("\(lost) history writes could not be made before exit") }
        Log.info("batond stopped")
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
            return try await store.prune(retention: config.retention, overrides: overrides, dryRun: dryRun)
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
            for warning in config.warnings { FileHandle.standardError.write(Data("warning: \(warning)\n".utf8)) }
            print("\(file): ok, \(config.actions.count) action\(config.actions.count == 1 ? "" : "s"): \(config.actions.map(\.name).joined(separator: ", "))")
            let instance = config.fleet?.instance ?? config.database ?? DatabasePath.default()
            print(describeTracking(config, instance: instance))
            if let fleet = config.fleet { return checkFleet(fleet) }
            return 0
        } catch {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            return 1
        }
    }

    /// Reads the config again; applies it whole, or refuses it whole and returns why.
    static func reload(path: String, into service: Service, current: ConfigBox, socket: String) -> String? {
        do {
            let config = try Config.load(path: path)
            for warning in config.warnings { Log.warning(warning) }
            service.install(generation(config, socket: socket))
            let old = current.swap(config)
            if old.socket != config.socket || old.database != config.database || old.socketMode != config.socketMode {
                Log.warning("socket and database settings change only at restart")
            }
            Log.info("reloaded \(path): \(config.actions.count) actions")
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// What requests are served against: the config's actions, and its access rules with the
    /// socket file's group looked up once, not per request.
    static func generation(_ config: Config, socket: String) -> Generation {
        Generation(actions: config.actions, access: config.access(socketGroup: fileGroup(socket)), owner: geteuid())
    }

    static func groupID(_ name: String) throws -> gid_t {
        if let id = gid_t(name) { return id }
        guard let entry = getgrnam(name) else {
            throw ConfigError(file: "config", problems: [.init(path: "socketGroup", message: "no group named \(name)")])
        }
        return entry.pointee.gr_gid
    }
}

/// The config in force, swapped whole on reload; guarded by its lock.
final class ConfigBox: @unchecked Sendable {
    private let lock = NSLock()
    private var config: Config

    init(_ config: Config) { self.config = config }

    var current: Config { lock.withLock { config } }

    func swap(_ new: Config) -> Config {
        lock.withLock {
            let old = config
            config = new
            return old
        }
    }
}
