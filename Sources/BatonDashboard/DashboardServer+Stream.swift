import BatonCore
import BatonIPC
import Foundation

extension DashboardServer {
    /// One page's event stream: a `snapshot` (batond's status) when the page is new, from another
    /// epoch or too far behind; otherwise the `update`s after its `Last-Event-ID`; `offline` while
    /// batond cannot be reached; a keepalive comment when nothing happens. Ends when the page
    /// goes away or reads too slowly.
    func stream(_ wire: HTTPWire, lastEventID: String?) {
        guard streams.add(1, ordering: .relaxed).newValue <= limits.maxStreams else {
            streams.subtract(1, ordering: .relaxed)
            wire.send(refusal(503, "too many event streams; close a dashboard tab").bytes(headOnly: false))
            return
        }
        defer { streams.subtract(1, ordering: .relaxed) }
        guard wire.send(SSE.head(extra: Assets.securityFields.map { ($0.name, $0.value) })) else { return }
        var cursor = lastEventID
        var toldOffline = false
        while true {
            let deadline = Date(timeIntervalSinceNow: Double(limits.keepalive.milliseconds) / 1_000)
            let view = feed.wait(until: deadline) { view in
                guard view.online else { return view.settled && !toldOffline }
                guard let cursor else { return true }
                return view.ring.resume(after: cursor) != .replay([])
            }
            let text: String
            if !view.online && !view.settled {
                text = SSE.keepalive
            } else if !view.online {
                text = toldOffline ? SSE.keepalive : SSE.event("offline", data: Self.message(view.offlineReason))
                toldOffline = true
            } else {
                toldOffline = false
                switch cursor.map(view.ring.resume(after:)) ?? .snapshot {
                case let .replay(events) where events.isEmpty:
                    text = SSE.keepalive
                case let .replay(events):
                    text = events.map { SSE.event($0.name, data: $0.data, id: view.ring.id($0.seq)) }.joined()
                    cursor = view.ring.id(events.last!.seq)
                case .snapshot:
                    // Taken after the ring's last seq was read: the updates replayed after it may be
                    // in the snapshot already, and the page drops those by their seq.
                    let id = view.ring.id(view.ring.lastSeq)
                    let answer = api.link.call(Request(op: .status))
                    switch answer {
                    case let .response(response) where response.error == nil:
                        text = SSE.event("snapshot", data: String(decoding: response.jsonLine(), as: UTF8.self), id: id)
                        cursor = id
                    case let .response(response):
                        text = SSE.event("offline", data: Self.message(response.error?.message ?? "batond refused"))
                        toldOffline = true
                    case let .unreachable(why):
                        text = SSE.event("offline", data: Self.message(why))
                        toldOffline = true
                    }
                }
            }
            guard wire.send(text, deadline: .now + limits.timeout) else { return }
            // A snapshot batond would not give: ask again in a second, not at once.
            if view.online && cursor == nil { Thread.sleep(forTimeInterval: 1) }
        }
    }

    static func message(_ text: String) -> String {
        var json = JSONWriter()
        json.beginObject()
        json.field("message", text)
        json.endObject()
        return json.text
    }
}
