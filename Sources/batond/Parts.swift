import BatonCore

/// batond's long-lived parts, in the swift-service-lifecycle shape: each is started in order and
/// gives back how to stop it; they are stopped in reverse, on every path — a part that cannot
/// start stops the ones before it, so nothing opened is left open. One task (the daemon's)
/// starts and stops them, so no lock: the class is not Sendable.
final class Parts {
    typealias Stop = @Sendable () async -> Void

    private var started: [(name: String, stop: Stop)] = []

    /// Starts one part: `body` returns its value and its stop. A throw is logged by the caller,
    /// after which `stopAll` stops the parts started before.
    func start<Value>(_ name: String, _ body: () async throws -> (Value, Stop)) async throws -> Value {
        let (value, stop) = try await body()
        started.append((name, stop))
        return value
    }

    /// A part with no value of its own.
    func start(_ name: String, _ body: () async throws -> Stop) async throws {
        let stop = try await body()
        started.append((name, stop))
    }

    /// Stops every part started, the last first.
    func stopAll() async {
        let parts = started
        started = []
        for part in parts.reversed() { await part.stop() }
    }

    /// The parts started so far, in order (for the log and the tests).
    var names: [String] { started.map(\.name) }
}
