import BatonCore
import BatonIPC
import BatonStore
import Foundation

/// What every command may use: where batond is, how to print, and a connection made on demand.
final class Context {
    let socketPath: String
    let databasePath: String?
    let isTerminal: Bool
    let useColor: Bool

    /// A context for this process: stdout's terminal and the environment decide colours.
    convenience init(socketPath: String, databasePath: String?) {
        let isTerminal = isatty(1) == 1
        let env = ProcessInfo.processInfo.environment
        self.init(socketPath: socketPath, databasePath: databasePath, isTerminal: isTerminal,
                  useColor: isTerminal && env["NO_COLOR"] == nil && env["TERM"] != "dumb")
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

    /// A connection to batond, or a `Failure` that says how to start it.
    func connect() throws -> Client {
        do {
            return try Client(path: socketPath)
        } catch let SocketError.system(_, _, code) where code == EACCES {
            // The socket's mode and group decide who may connect at all: say which group to join.
            var info = stat()
            let group = stat(socketPath, &info) == 0 ? getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) } : nil
            throw Failure(code: ExitCode.forbidden, message: "you may not use batond's socket \(socketPath)\(group.map { " (group \($0))" } ?? "")",
                          hint: group.map { "ask to be added to the group \($0) (usermod -aG \($0) USER), then log in again" })
        } catch {
            throw Failure(code: ExitCode.unavailable, message: "cannot reach batond at \(socketPath): \(Self.reason(error))",
                          hint: "start it with `batond --config FILE`, or pass --socket PATH (or set BATON_SOCKET)")
        }
    }

    /// Sends a request and returns the final answer, or throws the error it carries.
    func call(_ request: Request, onEvent: (Response) -> Void = { _ in }) throws -> Response {
        let client = try connect()
        let response: Response
        do {
            response = try client.call(request, onEvent: onEvent)
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure(code: ExitCode.unavailable, message: "lost batond at \(socketPath): \(Self.reason(error))")
        }
        if response.ok == false, let error = response.error {
            throw Failure(code: ExitCode.of(errorCode: error.code), message: error.message, wire: error)
        }
        return response
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

/// A command that ends with an error: an exit code, a message for `Error:`, and maybe a `Try:`.
struct Failure: Error {
    var code: Int32
    var message: String
    var hint: String?
    var wire: WireError?

    init(code: Int32, message: String, hint: String? = nil, wire: WireError? = nil) {
        self.code = code
        self.message = message
        self.hint = hint
        self.wire = wire
    }
}
