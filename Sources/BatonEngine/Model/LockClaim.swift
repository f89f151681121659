/// A lock an action's runs hold while they load or retry (`locks: ["db"]`), and how many runs may
/// hold it at once (the config's top-level `limits`, 1 when it names none): runs holding a
/// common lock beyond its limit never overlap.
public struct LockClaim: Sendable, Hashable, Codable {
    /// The lock's name, shared by every action that holds it.
    public var name: String
    /// How many runs may hold the lock at once, from 1.
    public var limit: Int

    public init(_ name: String, limit: Int = 1) {
        self.name = name
        self.limit = max(limit, 1)
    }
}

/// What a queued run waits for: the first of its locks it cannot take, and the runs that hold
/// it (or, when the lock has room but an older run waits for it first, that run, `ahead`).
public struct LockWait: Sendable, Equatable, Codable {
    /// A run holding the lock, or waiting for it ahead of this one.
    public struct Holder: Sendable, Equatable, Codable {
        public var run: Int64
        public var action: String
        public init(run: Int64, action: String) {
            self.run = run
            self.action = action
        }
    }

    public var lock: String
    /// The lock's limit (the run's claim of it).
    public var limit: Int
    /// The runs holding the lock now, oldest first.
    public var holders: [Holder]
    /// The older runs waiting for it first, when the lock has room (FIFO: none may pass them).
    public var ahead: [Holder]

    public init(lock: String, limit: Int, holders: [Holder], ahead: [Holder] = []) {
        self.lock = lock
        self.limit = limit
        self.holders = holders
        self.ahead = ahead
    }

    /// "waiting for lock db, held by migrate run 12" (or "…, behind backup run 14").
    public var text: String {
        var text = "waiting for lock \(lock)"
        if limit > 1 { text += " (\(limit) at once)" }
        let names = { (list: [Holder]) in list.map { "\($0.action) run \($0.run)" }.joined(separator: ", ") }
        if !holders.isEmpty { text += ", held by " + names(holders) }
        if !ahead.isEmpty { text += ", behind " + names(ahead) }
        return text
    }
}
