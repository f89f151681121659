import BatonCore
import BatonIPC
import FoundationEssentials

extension DashboardServer {
    /// One page's event stream, kept by the loop: where the page is in the feed.
    final class Stream: Sendable {
        let exchange: HTTPExchange
        let state: LoopOwned<State>
        /// The user a trusted proxy named: the stream's snapshot is asked `as` them, and only
        /// updates of the actions it lists are sent (the feed watches as the dashboard's user).
        let user: String?

        struct State {
            /// The id of the last event the page has (`Last-Event-ID`), nil before its snapshot.
            var cursor: String?
            var toldOffline = false
            /// A snapshot is being asked of batond.
            var snapshotting = false
            /// The actions the user may read, as the last snapshot listed them (nil: every one), and
            /// when they were read: asked again once older than `Service.groupsKept`'s 10 s (a user
            /// taken out of a group, or a reload's rules, reach an open page that soon).
            var readable: Set<String>?
            var readableAt: ContinuousClock.Instant?
            var rereading = false
        }

        init(_ exchange: HTTPExchange, cursor: String?, user: String?, reactor: Reactor) {
            self.exchange = exchange
            self.user = user
            state = LoopOwned(State(cursor: cursor), on: reactor)
        }
    }

    /// Opens a page's stream: its head now, then what the feed has for it.
    func openStream(_ exchange: HTTPExchange, lastEventID: String?, user: String?) {
        let key = ObjectIdentifier(exchange)
        // A proxied page starts from a snapshot of its own: its user's readable actions come with it.
        let stream = Stream(exchange, cursor: user == nil ? lastEventID : nil, user: user, reactor: reactor)
        let admitted = streams.access { streams -> Bool in
            guard streams.count < limits.maxStreams else { return false }
            streams[key] = stream
            return true
        }
        guard admitted else { return exchange.answer(refusal(503, "too many event streams; close a dashboard tab")) }
        exchange.stream(head: SSE.head(extra: Assets.securityFields.map { ($0.name, $0.value) })) { [weak self] in
            _ = self?.streams.access { $0.removeValue(forKey: key) }
        }
        push(stream)
    }

    /// The feed changed: every stream is brought up to date.
    func feedChanged() {
        for stream in streams.access({ Array($0.values) }) { push(stream) }
    }

    /// Brings one stream up to date with the feed: a snapshot (batond's status) when the page is
    /// new, from another epoch or too far behind; otherwise the updates after its cursor;
    /// `offline` while batond cannot be reached (once), nothing while the first watch is pending.
    func push(_ stream: Stream) {
        let view = feed.view
        guard view.online else {
            guard view.settled, stream.state.access({ state in defer { state.toldOffline = true }; return !state.toldOffline }) else { return }
            return stream.exchange.send(SSE.event("offline", data: Self.message(view.offlineReason)))
        }
        let (cursor, snapshotting) = stream.state.access { state -> (String?, Bool) in
            state.toldOffline = false
            return (state.cursor, state.snapshotting)
        }
        switch cursor.map(view.ring.resume(after:)) ?? .snapshot {
        case let .replay(events):
            guard let last = events.last else { return }
            rereadIfOld(stream)
            let readable = stream.state.access { $0.readable }
            let events = readable.map { names in events.filter { $0.action.map(names.contains) ?? false } } ?? events
            defer { stream.state.access { $0.cursor = view.ring.id(last.seq) } }
            guard !events.isEmpty else { return }
            stream.exchange.send(events.map { SSE.event($0.name, data: $0.data, id: view.ring.id($0.seq)) }.joined())
        case .snapshot:
            guard !snapshotting else { return }
            stream.state.access { $0.snapshotting = true }
            snapshot(stream, id: view.ring.id(view.ring.lastSeq))
        }
    }

    /// Asks batond for its status and sends it as the stream's snapshot with `id` (the ring's
    /// last seq when asked: updates replayed after it may be in the snapshot already, and the page
    /// drops those by their seq). Batond refusing: `offline`, and a new try in a second.
    func snapshot(_ stream: Stream, id: String) {
        api.channel.call(Request(op: .status).acting(stream.user)) { [self] result in
            guard stream.exchange.isOpen else { return }
            switch result {
            case let .success(response) where response.error == nil:
                var answer = response
                answer.id = nil
                stream.exchange.send(SSE.event("snapshot", data: String(decoding: answer.jsonLine(), as: UTF8.self), id: id))
                let readable = stream.user == nil ? nil : Set((response.actions ?? []).map(\.name))
                stream.state.access { $0.cursor = id; $0.snapshotting = false; $0.readable = readable; $0.readableAt = .now }
                push(stream)
            case let .success(response):
                refused(stream, response.error?.message ?? "batond refused")
            case let .failure(failure):
                refused(stream, failure.message)
            }
        }
    }

    /// A user's page whose readable actions were read over 10 s ago: read them again (as the
    /// user), meanwhile filtering by the old set.
    private func rereadIfOld(_ stream: Stream) {
        guard stream.user != nil else { return }
        let due = stream.state.access { state -> Bool in
            guard !state.rereading, let at = state.readableAt, ContinuousClock.now - at >= .seconds(10) else { return false }
            state.rereading = true
            return true
        }
        guard due else { return }
        api.channel.call(Request(op: .status).acting(stream.user)) { result in
            let names: Set<String>? = if case let .success(response) = result, response.error == nil { Set((response.actions ?? []).map(\.name)) } else { nil }
            stream.state.access { state in
                state.rereading = false
                // Refused or unreachable: nothing readable until a read says otherwise.
                state.readable = names ?? []
                state.readableAt = .now
            }
        }
    }

    private func refused(_ stream: Stream, _ why: String) {
        stream.exchange.send(SSE.event("offline", data: Self.message(why)))
        stream.state.access { $0.toldOffline = true }
        reactor.after(.seconds(1)) { [self] in
            stream.state.access { $0.snapshotting = false }
            if stream.exchange.isOpen { push(stream) }
        }
    }

    /// A keepalive comment on every stream, every `keepalive`: proxies and browsers keep it open.
    func scheduleKeepalive() {
        reactor.after(limits.keepalive) { [self] in
            for stream in streams.access({ Array($0.values) }) { stream.exchange.send(SSE.keepalive) }
            for exchange in outputStreams.access({ Array($0.values) }) { exchange.send(SSE.keepalive) }
            scheduleKeepalive()
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
