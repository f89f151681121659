import BatonCore

/// State the loop owns: changed only on the reactor's thread, so without a lock (asserted in
/// debug builds). Other threads post to the loop (`FleetCoordinator.onLoop`) to touch it.
final class LoopOwned<Value>: @unchecked Sendable {
    private var value: Value
    let reactor: Reactor

    init(_ value: Value, on reactor: Reactor) {
        self.value = value
        self.reactor = reactor
    }

    /// Reads or changes the value; on the loop only.
    func access<R>(_ body: (inout Value) -> R) -> R {
        assert(reactor.isCurrent, "loop-owned state touched off the loop")
        return body(&value)
    }
}
