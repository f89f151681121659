import BatonCore

/// Triggers that arrived together on a host, decided in one transaction from the rows it read
/// while it holds their keys' slot rows. The decision is the engine's one step
/// (`KeyDecision.batch`): this host reads the rows (`TriggerBatch+Rows`), takes the run ids it
/// asks (`idsNeeded`), calls it once and writes what it answers (`FleetCoordinator+BatchWrite`),
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

    /// Decides `entries` in order against `rows` (`KeyDecision.batch`); new runs take their ids
    /// from `ids` in order (`idsNeeded` says how many). `me` is this host's incarnation.
    static func decide(_ entries: [Entry], _ rows: Rows, me: String, ids: [Int64]) -> Decided {
        var fingerprints = ActionFingerprints()
        return decide(entries, rows, me: me, ids: ids, fingerprints: &fingerprints)
    }

    /// The same, with the actions' fingerprints kept in `fingerprints` (computed only where a
    /// decision needs one), for both of a transaction's decisions.
    static func decide(_ entries: [Entry], _ rows: Rows, me: String, ids: [Int64], fingerprints: inout ActionFingerprints) -> Decided {
        KeyDecision.batch(entries, rows, me: me, ids: ids, fingerprint: { fingerprints.of($0) })
    }

    /// How many new runs `entries` make against `rows`: the ids to take before deciding.
    static func idsNeeded(_ entries: [Entry], _ rows: Rows, me: String) -> Int {
        var fingerprints = ActionFingerprints()
        return idsNeeded(entries, rows, me: me, fingerprints: &fingerprints)
    }

    /// The same, keeping the fingerprints it computed for the decision after it.
    static func idsNeeded(_ entries: [Entry], _ rows: Rows, me: String, fingerprints: inout ActionFingerprints) -> Int {
        KeyDecision.batchIDs(entries, rows, me: me, fingerprint: { fingerprints.of($0) })
    }
}
