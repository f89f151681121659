
/// A `RunStore` that keeps the journal in memory: for embedding without history, and for tests.
public final class MemoryStore: RunStore {
    /// Everything written, in order; guarded by the mutex.
    private let journal = Locked<[JournalEntry]>([])

    public init() {}

    public func enqueue(_ entries: [JournalEntry], completion: @escaping @Sendable (Result<Void, BatonError>) -> Void) {
        journal.withLock { $0.append(contentsOf: entries) }
        completion(.success(()))
    }

    public func recoverableState() throws(BatonError) -> RecoverableState {
        RecoverableState(nextRunID: 1, unfinished: [])
    }

    /// The entries written so far.
    public var entries: [JournalEntry] { journal.withLock { $0 } }

    /// The transitions written so far, in order.
    public var transitions: [Transition] {
        entries.compactMap {
            switch $0 {
            case let .created(_, transition), let .transition(transition): transition
            default: nil
            }
        }
    }
}
