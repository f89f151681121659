import BatonCore
import BatonIPC
import Foundation

/// The dashboard's way to batond: a connection per request, as the user who started the
/// dashboard, so that the page may do exactly what that user may do from the CLI.
public struct BatondLink: Sendable {
    public let socketPath: String

    public init(socketPath: String) { self.socketPath = socketPath }

    /// What a request came to: batond's final answer, or why batond could not be asked.
    public enum Answer: Sendable {
        case response(Response)
        case unreachable(String)
    }

    /// Sends one request and returns the final answer (events before it are skipped).
    public func call(_ request: Request) -> Answer {
        do {
            let client = try Client(path: socketPath)
            return .response(try client.call(request))
        } catch let SocketError.system(_, _, code) {
            return .unreachable("cannot reach batond at \(socketPath): \(String(cString: strerror(code)))")
        } catch {
            return .unreachable("lost batond at \(socketPath): \(error)")
        }
    }

    /// The status answer's actions, or why there are none.
    public func actions() -> Result<[ActionInfo], WireError> {
        switch call(Request(op: .status)) {
        case let .response(response):
            if let error = response.error { return .failure(error) }
            return .success(response.actions ?? [])
        case let .unreachable(why):
            return .failure(WireError(code: .internal, message: why))
        }
    }
}
