/// One frame of a request stream: a request line (its newline taken off), or a line past the
/// transport's limit, skipped without being kept.
public enum RequestFrame: Equatable, Sendable {
    case line([UInt8])
    case oversized
}

/// What answers request lines: the service. A transport (the Unix socket server) calls it through
/// this protocol, defined below both, so that the service knows no transport and the transport no
/// service.
public protocol RequestHandler: AnyObject, Sendable {
    /// A complete request line (or `.oversized`) from `caller`; called on the event loop, so it must not block.
    func received(_ frame: RequestFrame, from caller: any Caller)
    /// The caller went away, or its connection was dropped.
    func closed(_ caller: any Caller)
}
