/// The last events the dashboard's one `watch` on batond delivered, numbered, so that a page
/// whose stream dropped resumes where it was (its `Last-Event-ID`) instead of starting over. An
/// event id is `EPOCH-SEQ`; the epoch changes whenever the watch starts again (batond restarted,
/// or dropped a watcher that fell behind), since the events in between are unknown: a page from
/// another epoch, or too far behind to be replayed from the ring, gets a whole new snapshot.
public struct EventRing: Sendable {
    public struct Event: Equatable, Sendable {
        public var seq: Int
        public var name: String
        public var data: String
        /// The action the update is of (a team's dashboard sends each user only theirs).
        public var action: String? = nil
    }

    public enum Resume: Equatable, Sendable {
        /// The events after the page's last, possibly none.
        case replay([Event])
        /// The page must load everything again.
        case snapshot
    }

    public let epoch: String
    public let capacity: Int
    /// Oldest first, with contiguous seqs.
    public private(set) var events: [Event] = []
    public private(set) var lastSeq = 0
    private var start = 0

    public init(epoch: String, capacity: Int = 1_024) {
        self.epoch = epoch
        self.capacity = max(capacity, 1)
    }

    public mutating func append(name: String, data: String, action: String? = nil) {
        lastSeq += 1
        events.append(Event(seq: lastSeq, name: name, data: data, action: action))
        if events.count - start > capacity { start += 1 }
        // Drop the dead prefix now and then, not on every append.
        if start >= capacity { events.removeFirst(start); start = 0 }
    }

    /// The events after `seq` in this epoch.
    public func after(_ seq: Int) -> [Event] {
        let live = events[start...]
        guard let first = live.first?.seq, seq >= first - 1 else { return Array(live) }
        return Array(live.dropFirst(seq - first + 1))
    }

    /// What a page that last saw event `id` (`EPOCH-SEQ`, or nil) needs.
    public func resume(after id: String?) -> Resume {
        guard let id, let dash = id.lastIndex(of: "-"), id[..<dash] == epoch, let seq = Int(id[id.index(after: dash)...]),
              seq <= lastSeq else { return .snapshot }
        let oldest = events[start...].first?.seq ?? lastSeq + 1
        guard seq >= oldest - 1 else { return .snapshot }
        return .replay(after(seq))
    }

    public func id(_ seq: Int) -> String { "\(epoch)-\(seq)" }
}

/// Server-Sent Events as the page's `EventSource` reads them.
public enum SSE {
    /// One event: its id (when it has one), its name, and data on one line (JSON has no newline).
    public static func event(_ name: String, data: String, id: String? = nil) -> String {
        var text = ""
        if let id { text += "id: \(id)\n" }
        text += "event: \(name)\n"
        for line in data.split(separator: "\n", omittingEmptySubsequences: false) { text += "data: \(line)\n" }
        return text + "\n"
    }

    /// A comment: keeps proxies and the browser from deciding the stream is dead.
    public static let keepalive = ": keepalive\n\n"

    /// The head of a stream: no length, no caching, and how soon to reconnect after a drop.
    public static func head(extra: [(String, String)]) -> String {
        var text = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-store\r\n"
        text += "Connection: close\r\nX-Content-Type-Options: nosniff\r\n"
        for (name, value) in extra { text += "\(name): \(value)\r\n" }
        return text + "\r\nretry: 1000\n\n"
    }
}
