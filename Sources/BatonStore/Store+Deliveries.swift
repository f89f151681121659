import BatonCore

/// Webhook deliveries (`webhook_deliveries`, schema version 5): which run a delivery id made. The
/// rows are written by the journal (`JournalEntry.delivery`), with the run's creation.
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
}
