// libFuzzer target: what the dashboard makes of a request before anything else looks at it: the
// head parser, then the gate (Host, route, method, session, Origin, body size), the query string
// decoder and the history filter. Any bytes must end in a decision, never a crash; nothing but the
// page's own files and the sign-in is served without the right Host and a live session in
// `Authorization`, and a state change never without a same-origin POST of JSON within the limit.
import BatonCore
import BatonIPC

let fuzzGate = Gate(address: ListenAddress(host: "127.0.0.1", port: 8123), bodyLimit: 256)
let fuzzSessions: Sessions = {
    var sessions = Sessions()
    sessions.issue(code: "c0de", now: .now)
    _ = sessions.redeem(code: "c0de", token: "t0k3n", now: .now)
    return sessions
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDashboard(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard case let .head(head, _) = HTTPRequestHead.parse(bytes, limit: 2_048, maxFields: 16) else { return 0 }
    let decision = fuzzGate.decide(head, sessions: fuzzSessions)
    switch decision {
    case let .refuse(status, reason, _):
        precondition((400..<500).contains(status) && !reason.isEmpty, "a refusal is a 4xx with a reason")
    case let .serve(route):
        precondition(["127.0.0.1:8123", "localhost:8123"].contains(head.field("host")?.lowercased() ?? ""), "served only to this Host")
        if route.needsSession {
            precondition(head.fields.filter { $0.name == "authorization" }.map { $0.value.lowercased() } == ["bearer t0k3n"], "served only with the session")
        }
        if route.changesState {
            precondition(head.method == "POST" && head.field("origin")?.hasPrefix("http://") == true)
            precondition((head.field("content-length").flatMap { Int($0) } ?? 1_000) <= 256)
        }
    }
    let pairs = QueryString.decode(head.query ?? "")
    precondition(pairs.count <= 64)
    if case let .success(filter) = QueryString.historyFilter(head.query ?? "") {
        precondition((0...1_000).contains(filter.limit))
    }
    return 0
}
