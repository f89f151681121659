import BatonClient
import BatonCore
import BatonIPC
import BatonStore
import FoundationEssentials
import Glibc

/// What every command may use: where batond is, how to print, and a `BatonClient` made on demand.
final class Context: Sendable {
    let socketPath: String
    let databasePath: String?
    let isTerminal: Bool
    let useColor: Bool
    /// The connection to batond once made; dropped when it is lost, so that the next call connects again.
    private let connected = Locked<BatonClient?>(nil)

    /// A context for this process: stdout's terminal and the environment decide colours.
    convenience init(socketPath: String, databasePath: String?) {
        let isTerminal = isatty(1) == 1
        self.init(socketPath: socketPath, databasePath: databasePath, isTerminal: isTerminal,
                  useColor: isTerminal && Environment.value("NO_COLOR") == nil && Environment.value("TERM") != "dumb")
    }

    init(socketPath: String, databasePath: String?, isTerminal: Bool, useColor: Bool) {
        self.socketPath = socketPath
        self.databasePath = databasePath
        self.isTerminal = isTerminal
        self.useColor = useColor
    }

    /// The history file read when batond does not answer and no --database was given: the
    /// system's history when the socket is the system daemon's, else this user's default.
    var fallbackDatabasePath: String {
        socketPath == SocketPath.system ? DatabasePath.system : DatabasePath.default()
    }

    /// The client of batond, connected on first use, or a `Failure` that says how to start it.
    func client() throws -> BatonClient {
        if let client = connected.withLock({ $0 }) { return client }
        let client = try reaching { () throws(BatonClientError) in try BatonClient(socket: socketPath) }
        connected.withLock { $0 = client }
        return client
    }

    /// Asks batond one question on this thread (`OneShotClient`: no thread, no task, a connection
    /// of its own), or throws the `Failure` its error stands for: the same ones as `call`.
    /// A question batond restarting in place did not take is asked again of the new one.
    func ask<T>(_ query: BatonQuery<T>) throws -> T {
        let clock = ContinuousClock()
        let start = clock.now
        var reconnect: Reconnect?
        while true {
            let client: OneShotClient
            do {
                client = try oneShotClient()
            } catch let failure as Failure where reconnect != nil && failure.code == ExitCode.unavailable {
                // batond said it stops or restarts: the next one may not listen yet.
                guard reconnect!.again() else { throw gone(failure) }
                continue
            }
            do {
                return try client.ask(query)
            } catch let error as BatonClientError {
                guard case .restarting = error, clock.now - start < Self.restartBound else { throw Failure(error) }
                if reconnect == nil { reconnect = Reconnect() }
            }
        }
    }

    /// A connection that could not be made once batond said it stops or restarts: says for how long it was tried.
    private func gone(_ failure: Failure) -> Failure {
        var failure = failure
        failure.message = Reconnect.gone(socket: socketPath, failure.message)
        return failure
    }

    /// How long a command sends again what batond, restarting in place, did not take (`.restarting`).
    static let restartBound = Duration.seconds(60)

    /// A connection of its own (`OneShotClient`), or the `Failure` that says how to start batond.
    func oneShotClient() throws -> OneShotClient {
        try reaching { () throws(BatonClientError) in try OneShotClient(socket: socketPath) }
    }

    /// A client `connect` made, or a `Failure` that says how to start batond or whom to ask for access.
    private func reaching<Client>(_ connect: () throws(BatonClientError) -> Client) throws -> Client {
        do throws(BatonClientError) {
            return try connect()
        } catch .forbidden {
            // The socket's mode and group decide who may connect at all: say which group to join.
            var info = stat()
            let group = stat(socketPath, &info) == 0 ? getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) } : nil
            throw Failure(code: ExitCode.forbidden, message: "you may not use batond's socket \(socketPath)\(group.map { " (group \($0))" } ?? "")",
                          hint: group.map { "ask to be added to the group \($0) (usermod -aG \($0) USER), then log in again" })
        } catch {
            throw Failure(code: ExitCode.unavailable, message: error.description, hint: "\(startAdvice), or pass --socket PATH (or set BATON_SOCKET)")
        }
    }

    /// How to start the batond this socket is for, as a `Try:` line says it.
    var startAdvice: String {
        Self.startAdvice(socket: socketPath, unitInstalled: SystemdUnits.underSystemd && SystemdUnits.batondInstalled, root: geteuid() == 0)
    }

    /// `start it with `sudo systemctl start batond`` for the system's socket where systemd runs
    /// the machine and the package's unit is installed; else batond by hand.
    static func startAdvice(socket: String, unitInstalled: Bool, root: Bool) -> String {
        guard socket == SocketPath.system, unitInstalled else { return "start it with `batond --config FILE`" }
        return "start it with `\(root ? "" : "sudo ")systemctl start batond`"
    }

    /// Runs `operation` on batond's client until it returns, or throws the `Failure` its error stands for.
    /// What batond, restarting in place, did not take (`.restarting`: nothing was done) is sent
    /// again, on a new connection: it reaches the new batond. The whole closure is sent again, so
    /// it holds at most one request that is not idempotent (a trigger), first: once that was
    /// taken, nothing after it in the closure may throw `.restarting` (`RunCommand.followed` and
    /// `BatonClient.wait(run:socket:)` turn it into `.unavailable`).
    func call<T: Sendable>(_ operation: @escaping @Sendable (BatonClient) async throws -> T) throws -> T {
        try calling { client in try Blocking.run { try await operation(client) } }
    }

    /// As `call`, `state` carried into `operation` and back out however it ends (a read's place
    /// survives a lost connection, and a call sent again goes on from it): the operation's task
    /// owns it while it runs, this thread once it has ended.
    func call<T: Sendable, State: Sendable>(carrying state: inout State,
                                            _ operation: @escaping @Sendable (BatonClient, inout State) async throws -> T) throws -> T {
        try calling { client in
            let ended = Blocking.run(carrying: state) { state in try await operation(client, &state) }
            state = ended.state
            return try ended.result.get()
        }
    }

    /// `call`'s connecting, sending again and errors, around `run` (which runs the operation on `client`).
    private func calling<T>(_ run: (BatonClient) throws -> T) throws -> T {
        let clock = ContinuousClock()
        let start = clock.now
        var reconnect: Reconnect?
        while true {
            let client: BatonClient
            do {
                client = try self.client()
            } catch let failure as Failure where reconnect != nil && failure.code == ExitCode.unavailable {
                // batond said it stops or restarts: the next one may not listen yet (a stop and
                // start without socket activation).
                guard reconnect!.again() else { throw gone(failure) }
                continue
            }
            do {
                return try run(client)
            } catch let error as BatonClientError {
                switch error {
                case .unavailable: connected.withLock { $0 = nil }
                case .restarting where clock.now - start < Self.restartBound:
                    connected.withLock { $0 = nil }
                    if reconnect == nil { reconnect = Reconnect() }
                    continue
                case .restarting: connected.withLock { $0 = nil }
                default: break
                }
                throw Failure(error)
            }
        }
    }

    /// `body`'s result; batond's refusal of `action` as unknown gets a `Try:` with the closest of
    /// its actions (`did you mean "deploy"?`), or the command that lists them.
    func suggestingAction<T>(_ action: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as Failure {
            guard case .unknownAction = failure.refusal, failure.hint == nil else { throw failure }
            var refused = failure
            let known = (try? ask(.actions))?.map(\.name) ?? []
            refused.hint = Suggestion.didYouMean(action, among: known) ?? "baton actions lists the actions you may use"
            throw refused
        }
    }

    /// Colours text for a terminal; plain elsewhere or with NO_COLOR.
    func paint(_ text: String, _ color: Color) -> String {
        useColor ? "\u{1B}[\(color.rawValue)m\(text)\u{1B}[0m" : text
    }

    /// Colours text by a phase: success green, failure red, cancelled yellow, the rest plain.
    func paint(_ text: String, phase: Phase) -> String {
        switch phase {
        case .success: paint(text, .green)
        case .failure: paint(text, .red)
        case .cancelled: paint(text, .yellow)
        case .queued, .loading, .retrying: text
        }
    }

    enum Color: String {
        case red = "31", green = "32", yellow = "33", blue = "34", dim = "2", bold = "1"
    }

    static func reason(_ error: any Error) -> String {
        if let socket = error as? SocketError, case let .system(_, _, code) = socket { return String(cString: strerror(code)) }
        return "\(error)"
    }
}
