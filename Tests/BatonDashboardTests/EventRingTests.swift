import BatonCore
@testable import BatonDashboard
import Testing

@Suite("Dashboard event ring, SSE and query strings")
struct EventRingTests {
    func ring(_ count: Int, capacity: Int = 4) -> EventRing {
        var ring = EventRing(epoch: "e1", capacity: capacity)
        for index in 1...max(count, 1) where count > 0 { ring.append(name: "update", data: "\(index)") }
        return ring
    }

    @Test("a page resumes after the last event it saw, in order; with nothing new it gets nothing")
    func resume() {
        let ring = ring(3)
        #expect(ring.resume(after: "e1-1") == .replay([.init(seq: 2, name: "update", data: "2"), .init(seq: 3, name: "update", data: "3")]))
        #expect(ring.resume(after: "e1-3") == .replay([]))
        #expect(ring.resume(after: "e1-0") == .replay(ring.after(0)))
        #expect(ring.id(3) == "e1-3")
    }

    @Test("a page from another epoch, from the future, too far behind, or without an id starts over from a snapshot",
          arguments: [nil, "e0-2", "e1-9", "e1-x", "garbage", "e1-1"])
    func snapshot(id: String?) {
        // Capacity 4 after 6 events: 3..6 are kept, so a page that saw 1 missed 2 for good.
        let ring = ring(6)
        #expect(ring.resume(after: id) == .snapshot)
    }

    @Test("the ring keeps the last `capacity` events however many pass through it")
    func bounded() {
        var ring = EventRing(epoch: "e", capacity: 3)
        for index in 1...1_000 { ring.append(name: "update", data: "\(index)") }
        #expect(ring.after(0).map(\.seq) == [998, 999, 1_000])
        #expect(ring.resume(after: "e-997") == .replay(ring.after(997)))
        #expect(ring.resume(after: "e-996") == .snapshot)
        #expect(ring.events.count <= 6, "the dead prefix is dropped")
    }

    @Test("an event is id, name and data lines, ended by a blank line")
    func sseFormat() {
        #expect(SSE.event("update", data: #"{"a":1}"#, id: "e-1") == "id: e-1\nevent: update\ndata: {\"a\":1}\n\n")
        #expect(SSE.event("offline", data: "two\nlines") == "event: offline\ndata: two\ndata: lines\n\n")
        #expect(SSE.head(extra: []).hasSuffix("\r\n\r\nretry: 1000\n\n"))
    }

    @Test("query strings decode escapes and +, keep malformed escapes as they came")
    func queryString() {
        #expect(QueryString.decode("a=1&b=two%20words&c=x+y&d=%zz&e") == [
            .init(name: "a", value: "1"), .init(name: "b", value: "two words"), .init(name: "c", value: "x y"),
            .init(name: "d", value: "%zz"), .init(name: "e", value: ""),
        ])
        #expect(QueryString.decode(String(repeating: "a=1&", count: 100)).count == 64)
    }

    @Test("the history filter takes the page's fields and names what is wrong")
    func historyFilter() throws {
        let filter = try QueryString.historyFilter("action=a&action=b&phase=failure&since=5&until=9&param=env%3Dprod&limit=20").get()
        #expect(filter == HistoryFilter(actions: ["a", "b"], phases: [.failure], since: Timestamp(rawValue: 5),
                                        until: Timestamp(rawValue: 9), params: ["env": "prod"], limit: 20))
        for (query, message) in [("phase=sideways", "phase: no phase is called sideways"),
                                 ("limit=5000", "limit: expected 0 to 1000, got 5000"),
                                 ("since=yesterday", "since: expected microseconds since the epoch, got yesterday"),
                                 ("param=env", "param: expected name=value, got env"),
                                 ("color=red", "the history takes action, phase, since, until, param and limit, not color")] {
            #expect(throws: BatonError.badRequest(message)) { try QueryString.historyFilter(query).get() }
        }
    }

    @Test("a search takes its text and the history's filters, 20 runs unless it says")
    func searchQuery() throws {
        let (text, filter) = try QueryString.search("text=connection%20refused&action=deploy&phase=failure").get()
        #expect(text == "connection refused")
        #expect(filter == HistoryFilter(actions: ["deploy"], phases: [.failure], limit: 20))
        #expect(try QueryString.search("limit=5&text=x").get().filter.limit == 5)
        #expect(throws: BatonError.badRequest("text: what to search for is missing")) { try QueryString.search("action=a").get() }
        #expect(throws: BatonError.badRequest("text: what to search for is missing")) { try QueryString.search("text=").get() }
    }
}
