import BatonCore
import FoundationEssentials

/// Triggers decided in batches: every trigger waiting on this host goes into one transaction,
/// which opens by locking the batch's key rows (in key order) and lock rows (in name order) and
/// reading what they are decided from; then takes the ids the new runs need; then writes every
/// decision, the new runs' `loading` where their key and a start slot are free, the slots and
/// the commit, in one pipeline. Three round trips and one commit for the batch, whatever its
/// size (a run that claims locks takes them after, in the same transaction). Each trigger is
/// answered only after the commit. A deadlock or serialization failure runs the batch again (and
/// after a pause, ahead of newer triggers, if it keeps failing); a batch that fails otherwise is
/// split in two and each half decided again, so a trigger that fails alone (a delivery or slot
/// another host recorded first, caught by a unique index) fails no other: alone, it is decided
/// once more without starting its run, which finds the other host's record, as before batches.
extension FleetCoordinator {
    /// The queue's handler: decides the batch, and hands back what kept meeting deadlocks.
    func settle(_ batch: inout SerialWorker<PendingTrigger>.Batch, _ link: inout PGLink) {
        let later = settle(batch.jobs, &link)
        if !later.isEmpty { batch.retry(later, after: .milliseconds(10)) }
    }

    /// Decides `jobs` in one transaction and answers them; returns those to try again later.
    private func settle(_ jobs: [PendingTrigger], _ link: inout PGLink) -> [PendingTrigger] {
        var tries = 0
        while true {
            do {
                let db = try link.open()
                conclude(jobs, try decide(jobs.map(\.entry), slots: jobs.reduce(0) { $0 + $1.slots }, on: db))
                return []
            } catch let error as PGError where error.isRetryable {
                tries += 1
                log("a batch of \(jobs.count) triggers met a deadlock or serialization failure (\(error.sqlState ?? "?")), "
                    + (tries == 5 ? "decided again after a pause" : "decided again"))
                if tries == 5 { return jobs }
            } catch let error as PGError where error.isConnectionProblem || !link.isOpen {
                link.dropIfBroken()
                conclude(jobs, jobs.map { _ in .failure(error) })
                return []
            } catch {
                return settleApart(jobs, error, &link)
            }
        }
    }

    /// A batch refused for one of its triggers: halves decided apart, and a trigger alone decided
    /// once more without starting its run when a unique index refused it (its start, or the
    /// delivery or slot another host recorded first).
    private func settleApart(_ jobs: [PendingTrigger], _ error: any Error, _ link: inout PGLink) -> [PendingTrigger] {
        link.dropIfBroken()
        if jobs.count > 1 {
            let half = jobs.count / 2
            return settle(Array(jobs[..<half]), &link) + settle(Array(jobs[half...]), &link)
        }
        if let error = error as? PGError, error.isUniqueViolation, jobs[0].entry.startIfFree {
            log("a trigger was refused by a unique index, decided again: \(error.message)")
            var again = jobs[0]
            again.entry.startIfFree = false
            return settle([again], &link)
        }
        conclude(jobs, [.failure(error)])
        return []
    }

    /// The batch's transaction, which may start as many runs as `slots` (granted on the loop):
    /// one result per entry (a refusal is an entry's, not the batch's).
    func decide(_ entries: [TriggerBatch.Entry], slots: Int, on db: PGConnection) throws -> [Result<Decided, any Error>] {
        // Each action's fingerprint where a decision needs it, once per action for the decision
        // and the new runs' rows, here rather than on the loop.
        var fingerprints = ActionFingerprints()
        do {
            let opening = TriggerBatch.opening(entries)
            guard let rows = try TriggerBatch.rows(try db.pipeline(opening.statements), opening) else {
                throw PGError(message: "the database's clock could not be read")
            }
            let draft = TriggerBatch.decide(entries, rows, me: host.incarnation, fingerprints: &fingerprints)
            let count = draft.ids
            let ids = count == 0 ? [] : try db.query("SELECT nextval('runs_id_seq') FROM generate_series(1, $1::int)", [String(count)])
                .rows.compactMap { $0[0].flatMap { Int64($0) } }
            guard ids.count == count else { throw PGError(message: "\(count) run ids were asked, \(ids.count) given") }
            return try write(entries, draft.taking(ids), slots: slots, on: db)
        } catch {
            if db.isOK { try? db.execute("ROLLBACK") }
            throw error
        }
    }
}
