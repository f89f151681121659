import BatonCore
import Foundation

/// The conductor's writes to the fleet's database: one thread takes every item waiting, writes
/// them in one transaction under the fleet's write lock, commits, notifies the other hosts when a
/// key slot changed, and then calls the items' completions. While the database cannot be
/// reached the items wait (none is lost or reordered), the store says why, and the batch is
/// tried again with a growing pause.
final class FleetWriter: @unchecked Sendable {
    typealias Completion = @Sendable (Result<Void, BatonError>) -> Void
    private let pool: PGPool
    private let host: FleetHost
    private let condition = NSCondition()
    private var items: [(entries: [JournalEntry], completion: Completion)] = []
    private var stopped = false
    private(set) var problem: String?
    private let onProblem: @Sendable (String?) -> Void
    private let onLost: @Sendable ([Int64]) -> Void

    init(pool: PGPool, host: FleetHost, onProblem: @escaping @Sendable (String?) -> Void, onLost: @escaping @Sendable ([Int64]) -> Void) {
        self.pool = pool
        self.host = host
        self.onProblem = onProblem
        self.onLost = onLost
        let thread = Thread { [self] in loop() }
        thread.name = "baton-fleet-writer"
        thread.start()
    }

    func enqueue(_ entries: [JournalEntry], completion: @escaping Completion) {
        condition.lock()
        items.append((entries, completion))
        condition.signal()
        condition.unlock()
    }

    var unavailableReason: String? { condition.withLock { problem } }

    /// Writes what is queued, then stops the thread; returns how many items could not be written.
    func close(deadline: Duration = .seconds(5)) -> Int {
        let end = ContinuousClock.now + deadline
        condition.lock()
        while !items.isEmpty && ContinuousClock.now < end { _ = condition.wait(until: Date().addingTimeInterval(0.05)) }
        stopped = true
        let left = items.count
        condition.signal()
        condition.unlock()
        return left
    }

    private func loop() {
        var pause = Duration.milliseconds(50)
        while true {
            condition.lock()
            while items.isEmpty && !stopped { condition.wait() }
            if stopped { condition.unlock(); return }
            let batch = items
            condition.unlock()
            do {
                let lost = try write(batch.flatMap(\.entries))
                condition.lock()
                items.removeFirst(batch.count)
                let recovered = problem != nil
                problem = nil
                condition.broadcast()
                condition.unlock()
                if recovered { onProblem(nil) }
                if !lost.isEmpty { onLost(lost) }
                for item in batch { item.completion(.success(())) }
                pause = .milliseconds(50)
            } catch let error as PGError where error.isConnectionProblem || error.isRetryable {
                let reason = "cannot write to PostgreSQL: \(error.message)"
                let changed = condition.withLock { () -> Bool in
                    defer { problem = reason }
                    return problem != reason
                }
                if changed { onProblem(reason) }
                Thread.sleep(forTimeInterval: pause / .seconds(1))
                pause = min(pause * 2, .seconds(2))
            } catch {
                // Not the connection: the batch itself is refused (a bug or a constraint); its
                // callers hear why, and the items after it go on.
                condition.lock()
                items.removeFirst(batch.count)
                condition.broadcast()
                condition.unlock()
                for item in batch { item.completion(.failure(.storeUnavailable("PostgreSQL refused a write: \(error)"))) }
            }
        }
    }

    private func write(_ entries: [JournalEntry]) throws -> [Int64] {
        try pool.with { db in
            try db.transaction {
                try db.query("SELECT pg_advisory_xact_lock($1)", [String(FleetSchema.Lock.write.rawValue)])
                var lost: [Int64] = []
                var notify = false
                for entry in entries { notify = try FleetJournal.apply(entry, on: db, as: host, lost: &lost) || notify }
                if notify { try db.execute("NOTIFY baton") }
                return lost
            }
        }
    }
}
