import Foundation

/// Connections to one database for the threads that need one: a connection is taken for one
/// piece of work and given back, so no two threads share one. A connection that failed is
/// dropped, not given back; the next taker opens a new one.
public final class PGPool: @unchecked Sendable {
    public let conninfo: String
    let defaults: [String: String]
    private let lock = NSCondition()
    private var idle: [PGConnection] = []
    private var open = 0
    private let limit: Int

    public init(conninfo: String, defaults: [String: String], limit: Int = 8) {
        self.conninfo = conninfo
        self.defaults = defaults
        self.limit = limit
    }

    /// A connection of its own for `body`; retried never (the caller decides).
    public func with<T>(_ body: (PGConnection) throws -> T) throws -> T {
        let connection = try take()
        do {
            let value = try body(connection)
            give(connection)
            return value
        } catch {
            if connection.isOK { give(connection) } else { drop() }
            throw error
        }
    }

    /// A connection outside the pool (the listener's, the lease's): the caller owns it.
    public func dedicated() throws(PGError) -> PGConnection {
        try PGConnection(conninfo, defaults: defaults)
    }

    private func take() throws -> PGConnection {
        lock.lock()
        while idle.isEmpty && open >= limit { lock.wait() }
        if let connection = idle.popLast() {
            lock.unlock()
            return connection
        }
        open += 1
        lock.unlock()
        do {
            return try PGConnection(conninfo, defaults: defaults)
        } catch {
            drop()
            throw error
        }
    }

    private func give(_ connection: PGConnection) {
        lock.lock()
        idle.append(connection)
        lock.signal()
        lock.unlock()
    }

    private func drop() {
        lock.lock()
        open -= 1
        lock.signal()
        lock.unlock()
    }

    /// Closes the idle connections (those in use close when given back after this).
    public func closeIdle() {
        lock.lock()
        open -= idle.count
        idle = []
        lock.unlock()
    }
}
