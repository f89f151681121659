import BatonCore

/// Triggers that arrived together on a host, decided in one transaction from the rows it read
/// while it holds their keys' slot rows. The decision is the engine's one step
/// (`KeyDecision.batch`): this host reads the rows (`TriggerBatch+Rows`), calls it once, takes
/// the run ids its draft asks (`Draft.ids`), numbers it and writes what it answers (`FleetCoordinator+BatchWrite`),
/// so that a batch decides exactly what the same triggers decided one transaction each, in the
/// order they came.
enum TriggerBatch {
    typealias Entry = KeyDecision.Batch.Entry
    /// What the transaction knows of a run a trigger may share, stop or compare definitions with.
    typealias RunFacts = KeyFacts.Run
    /// What the transaction read once it held the keys' rows.
    typealias Rows = KeyDecision.Batch.Rows
    typealias LastSuccess = KeyDecision.LastSuccess
    typealias DeliveryID = KeyDecision.Batch.DeliveryID
    typealias Outcome = KeyDecision.Batch.Outcome
    typealias Decided = KeyDecision.Batch.Decided

    typealias Draft = KeyDecision.Batch.Draft

    /// Decides `entries` in order against `rows` (`KeyDecision.batch`), once: its new runs are
    /// numbered by the ids taken after (`Draft.ids` of them, `Draft.taking`). `me` is this host's incarnation.
    static func decide(_ entries: [Entry], _ rows: Rows, me: String) -> Draft {
        var fingerprints = ActionFingerprints()
        return decide(entries, rows, me: me, fingerprints: &fingerprints)
    }

    /// The same, with the actions' fingerprints kept in `fingerprints` (computed only where a
    /// decision needs one), for the decision and the new runs' rows.
    static func decide(_ entries: [Entry], _ rows: Rows, me: String, fingerprints: inout ActionFingerprints) -> Draft {
        KeyDecision.batch(entries, rows, me: me, fingerprint: { fingerprints.of($0) })
    }
}
