/// State that only the event loop changes: no lock. Every access asserts, in debug builds, that it
/// happens on the loop's thread (`Reactor.isCurrent`); another thread that needs to know something
/// of it reads a value the loop publishes, or posts its work to the loop.
public final class LoopOwned<Value>: @unchecked Sendable {
    private var value: Value
    public let reactor: Reactor

    public init(_ value: Value, on reactor: Reactor) {
        self.value = value
        self.reactor = reactor
    }

    /// The value, changed in place; on the loop only.
    public func withValue<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        assertOnLoop(reactor)
        return try body(&value)
    }
}

/// Stops a debug build that touches loop-owned state off the loop.
@inlinable
public func assertOnLoop(_ reactor: Reactor, file: StaticString = #fileID, line: UInt = #line) {
    assert(reactor.isCurrent, "loop-owned state touched off the loop", file: file, line: line)
}

extension Reactor {
    /// Runs `body` now when called on the loop, else posts it there.
    public func onLoop(_ body: @escaping @Sendable () -> Void) {
        if isCurrent { body() } else { post(body) }
    }
}
