import Foundation
@testable import BatonCore
@testable import BatonEngine


/// A conductor with one in-process action whose runs count their starts and wait at `gate`.
func gated(_ action: Action, gate: Gate, starts: Counter, store: MemoryStore = MemoryStore()) async -> Conductor {
    let conductor = Conductor(actions: [], store: store)
    conductor.register(action) { _ in
        starts.increment()
        await gate.wait()
    }
    return conductor
}

/// Waits until the run is loading, from its update stream (no sleeps).
func untilLoading(_ ticket: Ticket) async {
    guard let updates = ticket.updates else { return }
    for await update in updates where update.run.phase == .loading { return }
}

/// A one-way gate for tests: tasks wait until it opens; opening releases all of them at once.
final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let released = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if released { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Counts calls across tasks.
final class Counter: Sendable {
    private let value = Locked(0)
    func increment() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}

/// Collects values appended from any task, in order.
final class Recorder<Value: Sendable>: Sendable {
    private let items = Locked<[Value]>([])
    func append(_ item: Value) { items.withLock { $0.append(item) } }
    var all: [Value] { items.withLock { $0 } }
}

/// Starts an attempt and records what it reports: its process group, progress, and outcome.
final class AttemptProbe: Sendable {
    let attempt: any Attempt
    let events = Recorder<AttemptEvent>()
    private let ended: AsyncStream<AttemptOutcome>
    private let began: AsyncStream<ProcessGroup?>
    private let spoke: AsyncStream<Void>

    /// `observe`: called with each event as it is told, before it is recorded.
    init(_ runner: any Runner, _ job: Job, observe: (@Sendable (AttemptEvent) -> Void)? = nil) {
        let (stream, continuation) = AsyncStream<AttemptOutcome>.makeStream()
        let (starts, start) = AsyncStream<ProcessGroup?>.makeStream()
        let (outputs, output) = AsyncStream<Void>.makeStream()
        (ended, began, spoke) = (stream, starts, outputs)
        let events = events
        attempt = runner.start(job) { event in
            observe?(event)
            events.append(event)
            if case let .started(group) = event {
                start.yield(group)
                start.finish()
            }
            if case .output = event {
                output.yield()
                output.finish()
            }
            if case let .ended(outcome) = event {
                output.finish()
                continuation.yield(outcome)
                continuation.finish()
            }
        }
    }

    /// Waits for the attempt's first output (or its end, if it says nothing).
    func firstOutput() async {
        for await _ in spoke { return }
    }

    /// The process group it reported when it started.
    var group: ProcessGroup? {
        for case let .started(group) in events.all { return group }
        return nil
    }

    var progress: [BatonCore.Progress] {
        events.all.compactMap { if case let .progress(progress) = $0 { progress } else { nil } }
    }

    /// Waits for the attempt to start (a spawner makes its process off the caller's thread), and
    /// says its process group.
    func started() async -> ProcessGroup? {
        for await group in began { return group }
        return group
    }

    /// Waits for the attempt to end.
    func outcome() async -> AttemptOutcome {
        for await outcome in ended { return outcome }
        return events.all.compactMap { if case let .ended(outcome) = $0 { outcome } else { nil } }.first!
    }
}

/// Puts an executable at `path` (mode 0755) holding `text`, written by install(1), a child: a file
/// this process wrote could be inherited, still open for writing, by a child another test forks at
/// that moment, and exec of it would fail with "Text file busy" (ETXTBSY) until that child execs.
func installExecutable(_ text: String, at path: String) throws {
    let source = path + ".text"
    try text.write(toFile: source, atomically: false, encoding: .utf8)
    defer { unlink(source) }
    let words: [String] = ["/usr/bin/install", "-m", "755", source, path]
    let argv = words.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    var status: Int32 = 0
    guard posix_spawn(&pid, "/usr/bin/install", nil, nil, argv, environ) == 0, waitpid(pid, &status, 0) == pid, status == 0 else {
        throw POSIXError(.EIO)
    }
}
