import BatonEngine
/// State that only one reactor's loop changes: no lock guards it, because no other thread
/// touches it (debug builds stop the process when one does). Other threads post to the loop,
/// and read what the loop publishes for them.
public final class LoopOwned<Value>: @unchecked Sendable {
    /// The loop that owns the value.
    public let reactor: Reactor
    // Inlinable (with the value usable from inline code): called across modules, unspecialized,
    // each access cost a call and a look-up of its closure's generic metadata (issue 39).
    // Exclusivity unchecked: only the loop's thread reaches the value, one `access` at a time (a
    // reentered access stops debug builds, `accessing`), so the runtime's check of each access
    // (about 70 instructions, most of the loop's 154 checks a run) guarded nothing more.
    @exclusivity(unchecked) @usableFromInline var value: Value
    #if DEBUG
    /// An `access` runs (debug builds): one inside it, which the exclusivity check caught, stops here.
    @usableFromInline var accessing = false
    #endif

    public init(_ value: Value, on reactor: Reactor) {
        self.value = value
        self.reactor = reactor
    }

    /// Runs `body` with the value, on the loop. Not reentrant: `body` reads and changes the
    /// value only (it performs no effect, which might come back to it).
    @inlinable @inline(__always)
    public func access<Result>(_ body: (inout Value) throws -> Result, file: StaticString = #fileID, line: UInt = #line) rethrows -> Result {
        reactor.assertOnLoop("loop-owned state", file: file, line: line)
        #if DEBUG
        precondition(!accessing, "loop-owned state accessed inside its own access", file: file, line: line)
        accessing = true
        defer { accessing = false }
        #endif
        return try body(&value)
    }
}

extension Reactor {
    /// Runs `body` now when called on the loop, else posts it there.
    public func onLoop(_ body: @escaping @Sendable () -> Void) {
        if isCurrent { body() } else { post(body) }
    }
}
