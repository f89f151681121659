/// Single flight for delivery ids, as a value: the first request with an id goes on, the ones
/// that come while it is being decided wait for its run, and later ones get that run at once.
/// The history keeps deliveries for good; this keeps the recent ones, at most `limit`.
public struct DeliveryTable<Waiter: Sendable>: Sendable {
    enum Entry: Sendable {
        case pending([Waiter])
        case done(Int64)
    }

    private var entries: [String: Entry] = [:]
    /// Done keys, oldest first, for dropping past `limit`.
    private var order: [String] = []
    public let limit: Int

    /// What a request with a delivery id does.
    public enum Begin: Sendable, Equatable {
        /// It is the first: look in the history, else press, then `finish`.
        case first
        /// Another request with the id is being decided: its waiter is called by `finish`.
        case waiting
        /// The id made this run.
        case known(Int64)
    }

    public init(limit: Int = 10_000) { self.limit = max(limit, 1) }

    /// The key of a delivery: per hook, since ids are the sender's.
    public static func key(hook: String, delivery: String) -> String { hook + "\u{0}" + delivery }

    public mutating func begin(_ key: String, _ waiter: Waiter) -> Begin {
        switch entries[key] {
        case let .done(run): return .known(run)
        case var .pending(waiters):
            waiters.append(waiter)
            entries[key] = .pending(waiters)
            return .waiting
        case nil:
            entries[key] = .pending([])
            return .first
        }
    }

    /// The first request's outcome: the run (then kept), or nil when it made none (refused,
    /// busy: a redelivery may try again). Returns the waiters to tell.
    public mutating func finish(_ key: String, run: Int64?) -> [Waiter] {
        guard case let .pending(waiters) = entries[key] else { return [] }
        if let run {
            entries[key] = .done(run)
            order.append(key)
            if order.count > limit {
                let dropped = order.count - limit
                for old in order.prefix(dropped) { entries[old] = nil }
                order.removeFirst(dropped)
            }
        } else {
            entries[key] = nil
        }
        return waiters
    }
}
