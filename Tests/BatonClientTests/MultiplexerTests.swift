@testable import BatonClient
import BatonCore
import Testing

/// The pending-request table as a value: ids, matching, leaving and a lost connection.
@Suite("Multiplexer: requests matched to answers by id")
struct MultiplexerTests {
    typealias Mux = Multiplexer<String>

    static func line(_ id: Int64?, ok: Bool?, event: String? = nil) -> Mux.Event {
        var response = Response(id: id.map { .number($0) }, ok: ok)
        response.event = event
        return .line(response)
    }

    /// An effect as text, for tables.
    static func text(_ effect: Mux.Effect) -> String {
        switch effect {
        case .start: "start"
        case let .write(id, request): "write \(id) \(request.op.rawValue) id=\(request.id.map { "\($0)" } ?? "none")"
        case let .event(sink, _): "event \(sink)"
        case let .answer(sink, _): "answer \(sink)"
        case let .fail(sink, .left): "left \(sink)"
        case let .fail(sink, .unavailable(reason)): "unavailable \(sink): \(reason)"
        case let .fail(sink, .restarting): "not taken \(sink)"
        }
    }

    static var restarting: Mux.Event {
        var response = Response(id: nil, ok: nil)
        response.restarting = true
        return .line(response)
    }

    @Test("batond's restarting line: a request it sent a line for was taken (followed on elsewhere), one it sent nothing for was not (sent again); later calls are not sent; the close after says nothing more")
    func restartingLine() {
        #expect(Self.walk([
            .call(Request(op: .trigger), "a"), .call(Request(op: .trigger), "b"), .call(Request(op: .status), "c"),
            Self.line(2, ok: nil, event: "update"), Self.line(3, ok: true), Self.restarting,
            .call(Request(op: .ping), "d"), .lost("closed"),
        ]) == ["start", "write 1 trigger id=number(1)", "write 2 trigger id=number(2)", "write 3 status id=number(3)",
               "event b", "answer c", "not taken a", "unavailable b: \(Mux.restartedReason)", "not taken d"])
    }

    @Test("a line with an id and restarting set is a request's line, not the connection's last")
    func restartingNeedsNoID() {
        var mux = Mux()
        _ = mux.handle(.call(Request(op: .ping), "a"))
        var response = Response(id: .number(1), ok: true)
        response.restarting = true
        #expect(mux.handle(.line(response)).map(Self.text) == ["answer a"])
    }

    static func walk(_ events: [Mux.Event]) -> [String] {
        var mux = Mux()
        return events.flatMap { mux.handle($0).map(text) }
    }

    @Test("the first call starts the connection; each call gets the next id, written into its request")
    func idsInOrder() {
        #expect(Self.walk([.call(Request(op: .status), "a"), .call(Request(op: .ping), "b")]) == [
            "start", "write 1 status id=number(1)", "write 2 ping id=number(2)",
        ])
    }

    @Test("events go to their request while it waits; the final answer ends it; later lines of its id are dropped")
    func eventsThenAnswer() {
        #expect(Self.walk([
            .call(Request(op: .trigger), "a"), .call(Request(op: .trigger), "b"),
            Self.line(2, ok: nil, event: "update"), Self.line(1, ok: true), Self.line(2, ok: false),
            Self.line(1, ok: nil, event: "update"), Self.line(2, ok: true),
        ]) == ["start", "write 1 trigger id=number(1)", "write 2 trigger id=number(2)", "event b", "answer a", "answer b"])
    }

    @Test("lines without an id, with a text id or with an id never given are dropped")
    func strangers() {
        var mux = Mux()
        _ = mux.handle(.call(Request(op: .ping), "a"))
        #expect(mux.handle(Self.line(nil, ok: false)).isEmpty)
        #expect(mux.handle(Self.line(9, ok: true)).isEmpty)
        #expect(mux.handle(.line(Response(id: .text("1")))).isEmpty)
        #expect(mux.pending.count == 1)
    }

    @Test("batond's refusal of the connection (busy, no id: a connection limit) answers every request waiting, and fails later calls with its message")
    func connectionRefused() {
        var refusal = Response(id: nil, ok: false)
        refusal.error = WireError(code: .busy, message: "uid 65534 has 5 connections open to batond, its limit")
        #expect(Self.walk([
            .call(Request(op: .status), "a"), .call(Request(op: .ping), "b"), .line(refusal), .call(Request(op: .ping), "c"),
        ]) == ["start", "write 1 status id=number(1)", "write 2 ping id=number(2)", "answer a", "answer b",
               "unavailable c: uid 65534 has 5 connections open to batond, its limit"])
    }

    @Test("leaving ends the request at once, once; its answer when it comes is dropped")
    func leave() {
        #expect(Self.walk([
            .call(Request(op: .wait), "a"), .leave(1), .leave(1), Self.line(1, ok: nil, event: "update"), Self.line(1, ok: true),
        ]) == ["start", "write 1 wait id=number(1)", "left a"])
    }

    @Test("a lost connection fails every waiting request in id order, and every later call at once with the first reason")
    func lost() {
        #expect(Self.walk([
            .call(Request(op: .watch), "a"), .call(Request(op: .wait), "b"), Self.line(1, ok: true),
            .call(Request(op: .ping), "c"), .lost("gone"), .lost("again"), .call(Request(op: .ping), "d"),
        ]) == [
            "start", "write 1 watch id=number(1)", "write 2 wait id=number(2)", "answer a", "write 3 ping id=number(3)",
            "unavailable b: gone", "unavailable c: gone", "unavailable d: gone",
        ])
    }

    @Test("a reserved id: a caller that leaves before its request comes gets it written, then ended left; one that leaves after, as any leave")
    func reservedLeftFirst() {
        var mux = Mux()
        let first = mux.reserve(), second = mux.reserve()
        #expect([first, second] == [1, 2])
        #expect(mux.handle(.leave(first)).isEmpty, "nothing to end before the request came")
        #expect(mux.handle(.call(Request(op: .wait), "a", reserved: first)).map(Self.text) == ["start", "write 1 wait id=number(1)", "left a"])
        #expect(mux.pending.isEmpty)
        #expect(mux.handle(.call(Request(op: .wait), "b", reserved: second)).map(Self.text) == ["write 2 wait id=number(2)"])
        #expect(mux.handle(.leave(second)).map(Self.text) == ["left b"])
        #expect(mux.handle(.leave(second)).isEmpty, "a second leave changes nothing")
        #expect(mux.handle(.call(Request(op: .ping), "c")).map(Self.text) == ["write 3 ping id=number(3)"], "unreserved calls take the ids after")
    }
}
