import Synchronization

/// A value one job's work sets and its completion reads, both on the writer's thread (one after
/// the other). Its mutex is never waited for (only that thread takes it); it makes the slot a
/// `Sendable` the compiler checks, where a bare `var` needed `@unchecked`. Found held, it stops
/// the process, naming itself: a second thread took it, and it is not the lock it claims to be.
final class WriterSlot<Value: Sendable>: Sendable {
    private let slot = Mutex<Value?>(nil) // ownership proof: only the writer's thread takes it

    var value: Value? {
        get { taken { $0 } }
        set { taken { $0 = newValue } }
    }

    private func taken<Result: Sendable>(_ body: (inout Value?) -> Result) -> Result {
        guard let result = slot.withLockIfAvailable({ body(&$0) }) else { preconditionFailure("WriterSlot: taken by two threads at once") }
        return result
    }
}
