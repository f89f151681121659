import BatonCore

/// batond's long-lived parts, in the swift-service-lifecycle shape: each is started in order and
/// gives back how to stop it; they are stopped in reverse, on every path — a part that cannot
/// start stops the ones before it, so nothing opened is left open.
final class Parts: Sendable {
    typealias Stop = @Sendable () async -> Void

    private let started = Locked<[(name: String, stop: Stop)]>([])

    /// Starts one part: `body` returns its value and its stop. A throw is logged by the caller,
    /// after which `stopAll` stops the parts started before.
    func start<Value>(_ name: String, _ body: () async throws -> (Value, Stop)) async throws -> Value {
        let (value, stop) = try await body()
        started.withLock { $0.append((name, stop)) }
        return value
    }

    /// A part with no value of its own.
    func start(_ name: String, _ body: () async throws -> Stop) async throws {
        let stop = try await body()
        started.withLock { $0.append((name, stop)) }
    }

    /// Stops every part started, the last first.
    func stopAll() async {
        let parts = started.withLock { parts in
            defer { parts = [] }
            return parts
        }
        for part in parts.reversed() { await part.stop() }
    }

    /// The parts started so far, in order (for the log and the tests).
    var names: [String] { started.withLock { $0.map(\.name) } }
}
