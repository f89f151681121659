import BatonCore
import BatonIPC
import BatonService
import BatonStore
import FoundationEssentials
import Glibc
import Synchronization

/// Each part of batond: how it starts, and how it stops (see `Parts`).
extension Daemon {
    /// The SQLite history or the fleet, recovered; stopped by writing what is queued.
    /// Its transitions are logged from the conductor's first (`startJournal`, before recovery: a
    /// run recovery ends or starts again was in the history and not in the log); that part's stop
    /// is `Backend.stopLog`, registered as the "journal" part where it stood.
    static func startBackend(_ launch: Launch, metrics: Metrics, reactor: Reactor, notifier: Notifier) async throws -> (Backend, Parts.Stop) {
        let backend: Backend
        let log = { (conductor: Conductor) in startJournal(conductor, metrics: metrics, host: launch.config.fleet?.host) }
        if let fleet = launch.config.fleet {
            backend = try Backend.fleet(launch.config, fleet, database: launch.databasePath, metrics: metrics, reactor: reactor,
                                        onFenced: { why in Self.restartAfterFence(why) }, logTransitions: log)
        } else {
            backend = try await Backend.sqlite(launch.config, path: launch.databasePath, metrics: metrics, reactor: reactor,
                                               migrating: { version, name in Self.migrating(version, name, notifier) },
                                               migrationNote: { version, note in Log.warning("history version \(version): \(note)") },
                                               searchIndex: { change in Self.changingSearchIndex(change, notifier) }, logTransitions: log)
        }
        return (backend, {
            // The writers' and the feed's closes block until their threads end: on a thread of
            // their own, not one of the cooperative pool's.
            let lost = await SystemThread.run { backend.close() }
            if lost > 0 { Log.error("\(lost) history writes could not be made before exit") }
            // Every run has ended: the runs' cgroup subtrees are empty, and go with batond.
            if case let .cgroup(hierarchy) = backend.tracking { hierarchy.removeSubtrees() }
        })
    }

    /// A migration of the history begins: said in the log, and to systemd, whose start timeout
    /// (90 s by default) a migration that rewrites every run (as version 2's keys did) may
    /// outlast, in one transaction that a kill would undo.
    static func migrating(_ version: Int, _ name: String, _ notifier: Notifier) {
        Log.info("migrating the history to version \(version) (\(name))")
        notifier.send(["EXTEND_TIMEOUT_USEC=\(6 * 3_600 * 1_000_000)", "STATUS=migrating the history to version \(version) (\(name))"])
    }

    /// The store makes the search index (`search: "index"`, missing from the file) or drops it
    /// (`"scan"`, present): said in the log, and to systemd, whose start timeout making it may
    /// outlast (a minute per 60 to 250 MiB of kept output on a small machine, in one transaction
    /// that a kill would undo).
    static func changingSearchIndex(_ change: SearchIndex.Change, _ notifier: Notifier) {
        switch change {
        case let .building(chunks, bytes):
            let mib = (Double(bytes) / 1_048_576 * 10).rounded() / 10
            Log.info(chunks == 0 ? "search: \"index\": making the search index (no kept output yet)"
                : "search: \"index\": building the search index over \(chunks) chunks (\(mib) MiB) of kept output, "
                    + "a minute per 60 to 250 MiB of it, by how random it is")
            notifier.send(["EXTEND_TIMEOUT_USEC=\(6 * 3_600 * 1_000_000)", "STATUS=building the search index"])
        case .dropping:
            Log.info("search: \"scan\": dropping the search index this history kept (its space is reused by new output)")
            // Freeing a large index's pages takes a while too.
            notifier.send(["EXTEND_TIMEOUT_USEC=\(6 * 3_600 * 1_000_000)", "STATUS=dropping the search index"])
        }
    }

    /// The request logic, and the server box it counts connections by.
    struct Serving {
        var service: Service
        var server: WriteOnce<Server>
        /// The webhook listener, once started (a restart in place quiesces it with the server).
        var webhooks = WriteOnce<HTTPServer>()
        /// Its `?wait=`s, answered at a stop's quiesce.
        var hooks = WriteOnce<WebhookListener>()
        /// What SIGHUP does: the same as the `reload` request.
        var reload: @Sendable (Service) async -> ReloadOutcome
        /// The loop the server runs on: the conductor's.
        var reactor: Reactor
        /// The control socket (a stop's quiesce closes and removes batond's own).
        var listener: ListeningSocket
        /// A second stop signal ends the quiesce under way (or the next one) at once.
        var hurry = Hurry()
    }

    static func makeService(_ launch: Launch, _ backend: Backend, socket: ListeningSocket, config: ConfigBox, notifier: Notifier,
                            metrics: Metrics) -> Serving {
        let conductor = backend.conductor
        let reload: @Sendable (Service) async -> ReloadOutcome = { service in
            notifier.reloading()
            let outcome = await Self.reload(path: launch.configPath, into: service, current: config, socket: socket.path,
                                      limits: backend.tracking.limitSupport, prepare: backend.prepare)
            if case .applied = outcome {
                ScheduleRecord.keep(config.current, path: launch.configPath)
                await backend.reloaded(config.current.actions)
            }
            notifier.ready(status: Self.status(of: conductor))
            return outcome
        }
        let server = WriteOnce<Server>()
        let service = Service(conductor: conductor, dispatcher: backend.dispatcher, history: backend.history, journal: backend.journal,
                              generation: Self.generation(launch.config, socket: socket.path),
                              hooks: Service.Hooks(reload: reload, prune: { dryRun throws(BatonError) in
                                  try await backend.prune(config.current, dryRun)
                              }, connections: { server.value?.connectionCount ?? 0 },
                                 restart: { Self.askRestart() }), metrics: metrics,
                              processTree: backend.tracking.description, reactor: conductor.reactor)
        return Serving(service: service, server: server, reload: reload, reactor: conductor.reactor, listener: socket)
    }

    /// The request server on the event loop; stopped once every connection is closed.
    static func startServer(_ config: Config, _ serving: Serving, socket: ListeningSocket) throws -> Parts.Stop {
        guard let fd = socket.take() else { throw DaemonError("the listening socket is gone") }
        let limits = Server.Limits(maxConnections: Self.openFileRoom(for: config), maxConnectionsPerUser: config.maxConnectionsPerUser,
                                   requestTimeout: config.requestTimeout)
        let server: Server
        do {
            server = try Server(listening: fd, limits: limits, reactor: serving.reactor, delegate: serving.service)
        } catch {
            close(fd)
            throw DaemonError("\(error)")
        }
        serving.server.set(server)
        let running = Task { await server.run() }
        return {
            server.stop()
            await running.value
        }
    }

    static func startMetrics(_ address: ListenAddress?, _ service: Service, reactor: Reactor) throws -> Parts.Stop {
        do {
            let http = try Self.serveMetrics(address, service, reactor: reactor)
            return { http?.stop() }
        } catch {
            throw DaemonError("cannot serve metrics on \(address.map(\.description) ?? ""): \(error)")
        }
    }

    /// Every transition to the journal (and the run counts to the metrics).
    static func startJournal(_ conductor: Conductor, metrics: Metrics, host: String?) -> Parts.Stop {
        let journal = TransitionLog(reactor: conductor.reactor, sink: conductor.lineSink as? JournalSink)
        let observer = conductor.observe { update in
            guard let update else { return }
            journal.append(update)
            // In a fleet every host's transitions come by: the dead-man series hear them all,
            // the counters only the runs this host ran.
            if let transition = update.transition {
                metrics.observed(update.run, transition, ranHere: update.run.host == nil || update.run.host == host)
            }
        }
        return {
            conductor.stopObserving(observer)
            await journal.close()
        }
    }

    /// STATUS= once a second when it changes, and the watchdog's pings.
    static func startReports(_ notifier: Notifier, _ backend: Backend) -> Parts.Stop {
        let reports = Task { await Self.reportStatus(backend.conductor, to: notifier) }
        let watchdog = Task { await Self.feedWatchdog(notifier, conductor: backend.conductor, backend: backend) }
        return {
            reports.cancel()
            watchdog.cancel()
        }
    }

    /// The fleet's join (nothing for SQLite), then retention every hour.
    static func startUpkeep(_ backend: Backend, _ config: ConfigBox) -> Parts.Stop {
        let joining = Task { await backend.connect() }
        let retention = Task {
            await joining.value
            await Self.pruneEveryHour(backend, config)
        }
        return {
            joining.cancel()
            retention.cancel()
        }
    }

    /// SIGHUP reloads; the first SIGTERM or SIGINT drains the runs for the shutdown grace, a
    /// second ends the grace at once. Returns once the runs are drained.
    static func waitForStop(_ signals: SignalWatcher, serving: Serving, backend: Backend, config: ConfigBox, notifier: Notifier) async {
        var shutdown: Task<Void, Never>?
        for await signal in signals.stream {
            if signal == SIGHUP {
                if case let .refused(problem) = await serving.reload(serving.service) {
                    Log.error("reload refused, keeping the old config:\n\(problem)")
                }
                continue
            }
            if signal == SIGUSR2, shutdown == nil, let problem = Reexec.problem() {
                // Nothing is stopped for an exec that could only fail.
                Log.error("restart in place refused: \(problem); batond serves on")
                continue
            }
            if shutdown != nil {
                // A restart asked while a restart or stop is under way (two `baton restart`s back
                // to back): the one under way goes on.
                if signal == SIGUSR2 {
                    Log.info("SIGUSR2 ignored: \(Reexec.isRequested ? "a restart in place" : "a stop") is already under way")
                    continue
                }
                // A stop asked during a restart in place: batond stops instead (its socket goes with it).
                Reexec.cancel()
                Log.info("second stop signal: cancelling the runs in flight now")
                backend.conductor.stopRemaining()
                serving.hurry.ask()
                continue
            }
            let grace = config.current.shutdownGrace
            var quiet: Task<Void, Never>?
            if signal == SIGUSR2 {
                quiet = restartInPlace(serving, notifier: notifier, grace: grace)
            } else {
                notifier.stopping()
                Log.info("stopping: no new triggers; runs that survive restarts are left to their shims, "
                    + "the others have \(DurationText.format(grace)) to finish")
            }
            // A stop: once the runs are drained (handed over, ended within the grace, or
            // cancelled), the servers answer what they took and end every connection with
            // `{"restarting":true}`, before the followers are ended: a client following a run
            // handed over waits for it on the next batond (docs/protocol.md).
            let settle: (@Sendable () async -> Void)? = quiet == nil ? { @Sendable in await quiesce(service: serving, reason: "stopping", closing: true).value } : nil
            shutdown = Task { [quiet] in
                // A restart in place: every request the server took is answered first (a trigger's
                // commit included), while the conductor still takes them.
                await quiet?.value
                backend.beginShutdown()
                await backend.conductor.shutdown(grace: grace, settle: settle)
                signals.finish()
            }
        }
        await shutdown?.value
    }

    /// SIGUSR2: the control socket (and a webhook socket systemd passed) is kept for the new
    /// batond, the server stops accepting and reading at once (a connection made from now on
    /// waits in the backlog, for the new batond) and answers what it took (`Server.quiesce`):
    /// the returned task ends then; the stop goes on as SIGTERM's; then `Reexec`.
    static func restartInPlace(_ serving: Serving, notifier: Notifier, grace: Duration) -> Task<Void, Never> {
        var sockets: [(name: String, fd: Int32)] = []
        if let server = serving.server.value {
            let systemds = SocketActivation.passed.control != nil && !SocketActivation.passed.ownsControl
            sockets.append((systemds ? "control" : Reexec.ownControlName, server.listeningDescriptor))
        }
        if let webhooks = SocketActivation.passed.webhooks {
            sockets.append(("webhooks", webhooks))
        } else if let webhooks = serving.webhooks.value {
            // Bound by batond itself (`webhooks.listen`): passed on too, so that a POST meanwhile waits in its backlog.
            sockets.append((Reexec.ownWebhooksName, webhooks.listeningDescriptor))
        }
        Reexec.request(sockets: sockets, notifier: notifier)
        notifier.reloading("restarting in place")
        let quiet = quiesce(service: serving, reason: "restart")
        // Said once the server has stopped accepting (the loop takes posts in order): a client told of it connects to the backlog.
        serving.reactor.post {
            Log.info("restarting in place: runs that survive restarts are left to their shims, "
                + "the others have \(DurationText.format(grace)) to finish; connections wait for the new batond")
        }
        return quiet
    }

    /// The servers stop accepting and reading at once and answer what they took
    /// (`Server.quiesce`), each connection ending with `{"restarting":true}`: the task ends once
    /// every server is quiet, or at the bound. `closing` (a stop): batond's own control socket
    /// (not systemd's) is closed and removed at once, so that a client connecting again is
    /// refused (and waits for the next batond) instead of waiting in a backlog nobody reads.
    static func quiesce(service serving: Serving, reason: String, closing: Bool = false) -> Task<Void, Never> {
        let (stream, told) = AsyncStream<Void>.makeStream()
        let servers = (serving.server.value == nil ? 0 : 1) + (serving.webhooks.value == nil ? 0 : 1)
        // Each server says once that it is quiet; the drain is over once every one has.
        let quiet: @Sendable () -> Void = { told.yield() }
        serving.server.value?.quiesce(within: Self.quiesceBound, quiet: quiet)
        serving.webhooks.value?.quiesce(within: Self.quiesceBound, quiet: quiet)
        if closing { serving.hooks.value?.endWaits() }
        if closing, serving.listener.owned != nil {
            serving.server.value?.closeListener()
            serving.listener.removeFile()
        }
        serving.hurry.onAsk { told.finish() }
        let start = ContinuousClock.now
        return Task {
            for await _ in stream.prefix(servers) {}
            if serving.hurry.asked { return Log.info("\(reason) drain: ended by a second stop signal; closing what is left") }
            // Which ended the drain: every connection's requests answered or parked, or the bound
            // (a client that does not read, or a stream that never parked).
            let took = ContinuousClock.now - start
            if took < Self.quiesceBound {
                Log.info("\(reason) drain: connections drained in \(DurationText.format(took)) (every request taken answered or parked)")
            } else {
                Log.info("\(reason) drain: connections not drained within \(DurationText.format(Self.quiesceBound)); closing what is left")
            }
        }
    }

    /// The `restart` op: SIGUSR2 to this process, or why not (nil: asked).
    static func askRestart() -> String? {
        if let problem = Reexec.problem() {
            Log.error("restart in place refused: \(problem); batond serves on")
            return problem
        }
        return kill(getpid(), SIGUSR2) == 0 ? nil : "cannot signal batond: \(String(cString: strerror(errno)))"
    }

    /// How long a restart in place waits for the requests its server took to be answered and
    /// written (a client that does not read holds it no longer).
    static let quiesceBound = Duration.seconds(10)
}
