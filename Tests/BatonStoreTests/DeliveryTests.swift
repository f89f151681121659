import BatonCore
@testable import BatonStore
import Testing

@Suite("Webhook deliveries in the history")
struct DeliveryTests {
    static let delivery = Delivery(hook: "gh", id: "72d3", address: "203.0.113.7")

    static func created(_ id: Int64, at: Int64 = 10) -> JournalEntry {
        let run = RunSnapshot(id: id, action: "deploy", key: "deploy", phase: .queued, policy: .join, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: at))
        return .created(run, Transition(runID: id, seq: 1, from: nil, to: .queued, at: run.queuedAt))
    }

    static func count(_ table: String, in store: Store) async throws -> Int64 {
        try await store.read { try $0.connection.scalar("SELECT count(*) FROM \(table)")?.int64 ?? -1 }
    }

    @Test("a delivery written with its run's creation is read back per hook; the first record of a delivery stays")
    func firstStays() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        #expect(try await store.run(ofDelivery: "72d3", hook: "gh") == nil)
        try await store.commit([Self.created(1), .delivery(Self.delivery, runID: 1, at: Timestamp(rawValue: 10))]).get()
        try await store.commit([Self.created(2), .delivery(Self.delivery, runID: 2, at: Timestamp(rawValue: 11))]).get()
        #expect(try await store.run(ofDelivery: "72d3", hook: "gh") == 1)
        #expect(try await store.run(ofDelivery: "72d3", hook: "other") == nil)
        try await store.commit([.delivery(Delivery(hook: "other", id: "72d3"), runID: 2, at: Timestamp(rawValue: 12))]).get()
        #expect(try await store.run(ofDelivery: "72d3", hook: "other") == 2)
    }

    @Test("a run's creation and its delivery commit together or not at all",
          arguments: [
              // The item fails after both were written (a transition the run's row does not allow).
              [DeliveryTests.created(1), .delivery(DeliveryTests.delivery, runID: 1, at: Timestamp(rawValue: 10)),
               .transition(Transition(runID: 1, seq: 2, from: .loading, to: .success, at: Timestamp(rawValue: 11)))],
              // The delivery's own write fails (no run 9): the run's creation goes with it.
              [DeliveryTests.created(1), .delivery(DeliveryTests.delivery, runID: 9, at: Timestamp(rawValue: 10))],
          ] as [[JournalEntry]])
    func oneTransaction(_ item: [JournalEntry]) async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        // Another item in the same batch is written: only the failing item is rolled back.
        async let other = store.commit([Self.created(2)])
        let result = await store.commit(item)
        #expect(throws: BatonError.self) { try result.get() }
        try await other.get()
        #expect(try await Self.count("runs", in: store) == 1)
        #expect(try await Self.count("webhook_deliveries", in: store) == 0)
        #expect(try await store.run(ofDelivery: "72d3", hook: "gh") == nil)
    }

    @Test("a trigger with a delivery: the run it creates and the run a second delivery joins have their rows once the answer comes")
    func throughTheConductor() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        let conductor = Conductor(actions: [], store: store)
        let (release, releaser) = AsyncStream<Void>.makeStream()
        let action = Action(name: "deploy", policy: .join)
        conductor.register(action) { _ in for await _ in release {} }
        func trigger(_ delivery: Delivery) -> Trigger {
            Trigger(action: action, key: "deploy", policy: .join, params: [:], peer: nil, via: "webhook gh", delivery: delivery)
        }
        let first = try await conductor.trigger(trigger(Self.delivery), follow: true)
        #expect(first.decision == .created(first.run.id))
        // Answered: the creation is committed, and its delivery with it.
        #expect(try await store.run(ofDelivery: "72d3", hook: "gh") == first.run.id)
        let joined = try await conductor.trigger(trigger(Delivery(hook: "gh", id: "8e41")), follow: false)
        #expect(joined.decision == .joined(first.run.id))
        #expect(try await store.run(ofDelivery: "8e41", hook: "gh") == first.run.id)
        let address = try await store.read { try $0.connection.scalar("SELECT address FROM webhook_deliveries WHERE delivery = '72d3'")?.string }
        #expect(address == "203.0.113.7")
        releaser.finish()
        for await update in try #require(first.updates) where update.run.phase.isTerminal { break }
    }
}
