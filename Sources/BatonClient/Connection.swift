import BatonCore
import FoundationEssentials

/// Where a request's events and final answer go.
struct Sink: Sendable {
    var event: @Sendable (Response) -> Void = { _ in }
    var end: @Sendable (Result<Response, RequestEnding>) -> Void
}

/// One transport and the multiplexer of its requests. Every event is handled under the lock and
/// its effects performed after it is released, in order: lines are written, sinks called.
final class Connection: Sendable {
    let transport: any BatonTransport
    private let state = Locked(Multiplexer<Sink>())

    init(transport: any BatonTransport) {
        self.transport = transport
    }

    /// Handles `event` and performs its effects; returns the id a `call` was given (nil when it
    /// failed at once, the connection being gone).
    @discardableResult
    func handle(_ event: Multiplexer<Sink>.Event) -> Int64? {
        let effects = state.withLock { $0.handle(event) }
        var id: Int64?
        for effect in effects {
            switch effect {
            case .start:
                // The reader holds the connection until the transport ends, so that every pending
                // request hears of the end even after the client itself is gone.
                transport.start(receive: { [self] line in received(line) }, closed: { [self] reason in handle(.lost(reason)) })
            case let .write(written, request):
                id = written
                guard let line = Self.line(request) else {
                    handle(.leave(written))
                    continue
                }
                transport.send(line)
            case let .event(sink, response): sink.event(response)
            case let .answer(sink, response): sink.end(.success(response))
            case let .fail(sink, ending): sink.end(.failure(ending))
            }
        }
        return id
    }

    /// The id of the caller's next request, taken before it is sent (`Multiplexer.reserve`).
    func reserve() -> Int64 {
        state.withLock { $0.reserve() }
    }

    private func received(_ line: [UInt8]) {
        guard let response = FastResponse.read(line) ?? (try? JSONDecoder().decode(Response.self, from: Data(line))) else {
            // A line that cannot be read may be some request's answer: waiting on would hang it.
            handle(.lost(SocketLines.unreadable(line)))
            return transport.close()
        }
        handle(.line(response))
    }

    /// A request as the line batond reads, newline included (nil if it cannot be encoded).
    static func line(_ request: Request) -> [UInt8]? {
        guard var line = request.jsonLine() else { return nil }
        line.append(UInt8(ascii: "\n"))
        return line
    }
}
