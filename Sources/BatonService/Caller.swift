import BatonCore
import BatonIPC

/// The client of the requests the service answers: who it is, and where its answers go. The
/// socket server's `ServerConnection` is one; a test's recorder is another, so that every
/// operation, access decision and error can be tested with no socket and no process.
public protocol Caller: AnyObject, Sendable {
    /// Who asks (the kernel's `SO_PEERCRED` for a socket).
    var peer: Peer { get }
    /// Whether the client has gone: a watch registered after that is stopped at once.
    var isClosed: Bool { get }
    /// One response line (the newline is added); from any thread.
    func send(_ line: [UInt8])
    /// The request is fully answered.
    func endRequest()
    /// The client now follows a stream (`watch`): it gets the smaller output limit.
    func markStreaming()
}

extension ServerConnection: Caller {}
