import BatonEngine
import Synchronization

/// A reference set once (a server made after what reads it), then read by any thread, with no
/// lock: nil until it is set; a second set is ignored.
public final class WriteOnce<Value: AnyObject & Sendable>: Sendable {
    private let reference = AtomicLazyReference<Value>()

    public init() {}

    /// Sets the value, unless it was set before.
    public func set(_ value: Value) { _ = reference.storeIfNil(value) }

    /// The value, once set.
    public var value: Value? { reference.load() }
}
