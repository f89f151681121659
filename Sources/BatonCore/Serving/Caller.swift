
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
    /// Calls `body` once at most `bytes` of what was sent wait to be written to the client, or
    /// the client has gone (at once when that is so now): a reader of a long history sends its
    /// next page only then, so a client that reads slowly slows its read instead of being dropped.
    func whenDrained(below bytes: Int, _ body: @escaping @Sendable () -> Void)
    /// Counts bytes kept for the client that are not yet written out (a follower's live output held
    /// while its history is read), or, negative, no longer kept: they count as unsent output, so a
    /// client that does not read is closed at its limit, and the server's total covers them.
    func hold(_ bytes: Int)
    /// The request now follows a stream (a run to its end, a watch, live output): a restart in
    /// place may end it there (the socket server's `quiesce`). No default: a caller that wraps
    /// another (`ActingCaller`) must pass it on, or a restart waits its whole bound for it.
    /// Called through `Exchange.park`, which unparks in its `finish`/`fail`.
    func park()
    /// The parked request ends as usual: its final answer follows (once per `park`).
    func unpark()
}

extension Caller {
    /// Returns once at most `bytes` wait to be written, or the client has gone.
    public func drained(below bytes: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            whenDrained(below: bytes) { continuation.resume() }
        }
    }
}
