import BatonEngine
import Glibc

/// A detached pthread of the process's own, for a loop that owns it (the reactor, a worker).
public enum SystemThread {
    /// Starts a detached thread that runs `body`, with a stack of `stackSize` bytes (nil: the
    /// system's default).
    public static func start(stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let failed = pthread_create(&thread, &attributes, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        precondition(failed == 0, "cannot start a thread: \(String(cString: strerror(failed)))")
    }

    /// Runs blocking `body` (a worker's close, a join) on a thread of its own and resumes the
    /// caller with its result: no thread of Swift's cooperative pool waits meanwhile.
    public static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            start { continuation.resume(returning: body()) }
        }
    }

    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
