import BatonEngine
import Synchronization

/// A count that any thread adds to and reads, with no lock (dropped lines, lost writes).
public final class Counter: Sendable {
    private let value: Atomic<Int>

    public init(_ initial: Int = 0) { value = Atomic(initial) }

    /// Adds `amount`.
    public func add(_ amount: Int = 1) { value.wrappingAdd(amount, ordering: .relaxed) }

    /// The count now.
    public var current: Int { value.load(ordering: .relaxed) }

    /// The count now, leaving 0.
    public func take() -> Int { value.exchange(0, ordering: .relaxed) }
}
