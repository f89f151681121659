import BatonCore

/// Webhook deliveries (`webhook_deliveries`, schema version 4): which run a delivery id made.
extension Store {
    /// The run recorded for `delivery` of `hook`, if one was.
    public func run(ofDelivery delivery: String, hook: String) async throws(BatonError) -> Int64? {
        do {
            return try await read { history in
                try history.connection.scalar("SELECT run_id FROM webhook_deliveries WHERE hook = ? AND delivery = ?",
                                              [.text(hook), .text(delivery)])?.int64
            }
        } catch let error as BatonError {
            throw error
        } catch {
            throw .storeUnavailable("cannot read the webhook deliveries in \(path): \(error)")
        }
    }

    /// Records that `delivery` of `hook` made (or joined) `run`; the first record of a delivery stays.
    public func record(delivery: String, hook: String, run: Int64, address: String?, at: Timestamp) async throws(BatonError) {
        do {
            try await perform { connection in
                try connection.withStatement("""
                    INSERT INTO webhook_deliveries (hook, delivery, run_id, address, at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (hook, delivery) DO NOTHING
                    """) { statement in
                    try statement.run([.text(hook), .text(delivery), .integer(run), address.map { .text($0) } ?? .null, .integer(at.rawValue)])
                }
            }
        } catch let error as BatonError {
            throw error
        } catch {
            throw .storeUnavailable("cannot record a webhook delivery in \(path): \(error)")
        }
    }
}
