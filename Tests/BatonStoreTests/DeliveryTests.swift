import BatonCore
@testable import BatonStore
import Testing

@Suite("Webhook deliveries in the history")
struct DeliveryTests {
    /// A history with runs 1 and 2.
    func store(_ dir: TemporaryDirectory) throws -> Store {
        let path = dir.file("h.sqlite")
        do {
            let connection = try Connection(path: path)
            try Migrator.migrate(connection)
            try connection.execute("""
                INSERT INTO runs (id, action, key, phase, policy, queued_at) VALUES (1, 'deploy', 'deploy', 'queued', 'reject', 1), (2, 'deploy', 'deploy', 'queued', 'reject', 2)
                """)
        }
        return try Store(path: path)
    }

    @Test("a delivery's run is read back per hook; the first record of a delivery stays")
    func firstStays() async throws {
        let dir = TemporaryDirectory()
        let store = try store(dir)
        defer { store.close() }
        #expect(try await store.run(ofDelivery: "72d3", hook: "gh") == nil)
        try await store.record(delivery: "72d3", hook: "gh", run: 1, address: "203.0.113.7", at: Timestamp(rawValue: 10))
        try await store.record(delivery: "72d3", hook: "gh", run: 2, address: "203.0.113.8", at: Timestamp(rawValue: 11))
        #expect(try await store.run(ofDelivery: "72d3", hook: "gh") == 1)
        #expect(try await store.run(ofDelivery: "72d3", hook: "other") == nil)
        try await store.record(delivery: "72d3", hook: "other", run: 2, address: nil, at: Timestamp(rawValue: 12))
        #expect(try await store.run(ofDelivery: "72d3", hook: "other") == 2)
    }

    @Test("a delivery goes with its run")
    func cascade() async throws {
        let dir = TemporaryDirectory()
        let store = try store(dir)
        try await store.record(delivery: "d", hook: "gh", run: 2, address: nil, at: Timestamp(rawValue: 10))
        store.close()
        let connection = try Connection(path: dir.file("h.sqlite"))
        try connection.execute("PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = 2")
        #expect(try connection.scalar("SELECT count(*) FROM webhook_deliveries")?.int64 == 0)
    }
}
