import BatonClient
import BatonCore
import Foundation
import Testing

/// `BatonClient` against a real batond: many tasks on one connection, leaving a run, losing batond.
@Suite("End to end: BatonClient", .serialized, .offPool)
struct ClientTests {
    static func config(gate: FifoGate) -> String {
        """
        {
          actions: {
            gated: { exec: ["sh", "-c", "cat \\"$GATE\\" > /dev/null"], env: { GATE: "\(gate.path)" },
                     policy: "reject", policies: ["join"] },
            hello: { exec: ["echo", "hello from baton"] },
          },
        }
        """
    }

    /// Releases the gate off the pool (opening a FIFO blocks until the run's reader opens it).
    static func release(_ gate: FifoGate) async throws {
        // FifoGate holds only constants; the blocking open must not hold a pool thread.
        nonisolated(unsafe) let gate = gate
        try await onThread { gate.release() }
    }

    /// Waits off the pool for the run's process to open the gate, and holds it open for writing
    /// (see `FifoGate.opened`), unreleased.
    static func reader(of gate: FifoGate) async throws -> Int32 {
        nonisolated(unsafe) let gate = gate
        return try await onThread { gate.opened() }
    }

    /// The first update of `watch` whose run is loading: the run that started.
    static func firstLoading(_ watch: AsyncThrowingStream<RunUpdate, any Error>) async throws -> RunSnapshot? {
        for try await update in watch where update.run.phase == .loading { return update.run }
        return nil
    }

    @Test("100 concurrent tasks joining on one connection share one run and each get its outcome")
    func hundredJoin() async throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        let client = try BatonClient(socket: daemon.socket)
        let (sent, sentOne) = AsyncStream<Void>.makeStream()
        let outcomes = try await withThrowingTaskGroup(of: RunOutcome.self) { group in
            for _ in 0..<100 {
                group.addTask {
                    let handle = client.trigger("gated", policy: .join)
                    sentOne.yield()
                    return try await handle.outcome
                }
            }
            var count = 0
            for await _ in sent {
                count += 1
                if count == 100 { break }
            }
            // batond reads a connection's lines in order and decides each trigger as it reads it:
            // once this ping is answered, all 100 are attached to the run.
            _ = try await client.version()
            try await Self.release(gate)
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.count == 100)
        #expect(Set(outcomes.map(\.run.id)).count == 1)
        #expect(outcomes.allSatisfy { $0.phase == .success })
        #expect(outcomes.filter { $0.decision == .created }.count == 1)
        #expect(outcomes.filter { $0.decision == .joined && $0.shared }.count == 99)
        #expect(try await client.history(HistoryFilter(actions: ["gated"])).count == 1)
    }

    @Test("cancelling the Swift task that waits for a run leaves it running; it ends in success when released")
    func cancelLeaves() async throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        let client = try BatonClient(socket: daemon.socket)
        let watch = client.watch(action: "gated")
        let task = Task { try await client.run("gated") }
        let loading = try #require(try await Self.firstLoading(watch))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        let status = try await client.status()
        // Required: a cancelled run has no reader left for the gate, whose release would block.
        try #require(status.actions.first { $0.name == "gated" }?.inFlight?.map(\.id) == [loading.id])
        try await Self.release(gate)
        #expect(try await client.wait(run: loading.id).phase == .success)
    }

    @Test("batond killed while a run is awaited: the call throws unavailable, as does the watch, and later calls")
    func killedDaemon() async throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        let client = try BatonClient(socket: daemon.socket)
        let watch = client.watch(action: "gated")
        let outcome = Task { try await client.run("gated") }
        _ = try #require(try await Self.firstLoading(watch))
        // `loading` is told once its record commits, while a spawner thread makes the process: a
        // kill then may come before the spawn (no process, no reader of the gate ever) or between
        // its vfork and exec (the child's copy of the listening socket still takes a connection).
        // The kill waits for the run's process at its gate: then it has exec'd and holds none of them.
        let held = try await Self.reader(of: gate)
        daemon.crash()
        // The run's process outlives a killed batond (no recovery follows here): let it end, or
        // it waits on the gate for ever, after the test process too.
        defer { gate.release(held) }
        var errors: [any Error] = []
        do { _ = try await outcome.value } catch { errors.append(error) }
        do { for try await _ in watch {} } catch { errors.append(error) }
        do { _ = try await client.status() } catch { errors.append(error) }
        #expect(errors.count == 3)
        for error in errors {
            guard case let .unavailable(message)? = error as? BatonClientError else {
                Issue.record("expected unavailable, got \(error)")
                continue
            }
            #expect(message.contains(daemon.socket))
        }
        #expect(throws: BatonClientError.self) { try BatonClient(socket: daemon.socket) }
    }

    @Test("a refusal comes typed: busy names the run in flight and since when; an undeclared param names the param")
    func refusals() async throws {
        let gate = try FifoGate()
        let daemon = try Daemon(config: Self.config(gate: gate))
        let client = try BatonClient(socket: daemon.socket)
        let watch = client.watch(action: "gated")
        let first = client.trigger("gated")
        let loading = try #require(try await Self.firstLoading(watch))
        do {
            _ = try await client.run("gated")
            Issue.record("a second press of a reject action was not refused")
        } catch let BatonClientError.busy(run, since, _) {
            #expect(run == loading.id)
            #expect(since != nil && since! >= loading.queuedAt)
        }
        await #expect(throws: BatonClientError.badParam(name: "x", reason: "action hello takes no params, got x")) {
            try await client.run("hello", params: ["x": "1"])
        }
        await #expect(throws: BatonClientError.unknownAction(#"unknown action "nope""#)) { try await client.run("nope") }
        try await Self.release(gate)
        #expect(try await first.outcome.phase == .success)
    }
}
