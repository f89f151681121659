import BatonEngine
/// State that only one reactor's loop changes: no lock guards it, because no other thread
/// touches it (debug builds stop the process when one does). Other threads post to the loop,
/// and read what the loop publishes for them.
public final class LoopOwned<Value>: @unchecked Sendable {
    /// The loop that owns the value.
    public let reactor: Reactor
    // Inlinable (with the value usable from inline code): called across modules, unspecialized,
    // each access cost a call and a look-up of its closure's generic metadata (issue 39).
    @usableFromInline var value: Value

    public init(_ value: Value, on reactor: Reactor) {
        self.value = value
        self.reactor = reactor
    }

    /// Runs `body` with the value, on the loop. Not reentrant: `body` reads and changes the
    /// value only (it performs no effect, which might come back to it).
    @inlinable @inline(__always)
    public func access<Result>(_ body: (inout Value) throws -> Result, file: StaticString = #fileID, line: UInt = #line) rethrows -> Result {
        reactor.assertOnLoop("loop-owned state", file: file, line: line)
        return try body(&value)
    }
}

extension Reactor {
    /// Runs `body` now when called on the loop, else posts it there.
    public func onLoop(_ body: @escaping @Sendable () -> Void) {
        if isCurrent { body() } else { post(body) }
    }
}
