import BatonCore
import FoundationEssentials

/// Queued runs of this host started together: one transaction locks their key rows (in key
/// order) and reads each run with its key's slot and whether its window has passed, in the round
/// trip of its BEGIN; then writes the `loading` of every run that may start, NOTIFY and COMMIT in
/// one pipeline. A run whose action claims locks, or that a hook made, is claimed after the key
/// rows (its lock rows, all the batch's in name order, then `claim`), in the same transaction.
extension FleetCoordinator {
    /// Starts the queued runs `ids` of this host that hold a free key, as many as `slots` (the
    /// start slots the loop granted; the others `noSlot`), adding those it claims (committed) to
    /// `claimed`. A unique violation (another run of a key is loading, whatever this host
    /// believed) starts each alone: that one is "not yet", the others start.
    func start(_ ids: [Int64], slots: Int, claimed: inout [Claimed], on db: PGConnection) throws -> [Int64: Started] {
        var results: [Int64: Started] = [:]
        let taken = Array(ids.prefix(max(slots, 0)))
        for id in ids.dropFirst(taken.count) { results[id] = .noSlot }
        guard !taken.isEmpty else { return results }
        do {
            for (id, started) in try startTogether(taken, claimed: &claimed, on: db) { results[id] = started }
        } catch let error as PGError where error.isUniqueViolation {
            if taken.count == 1 {
                log("run \(taken[0]) could not start yet: \(error.message)")
                results[taken[0]] = .notStartable
                return results
            }
            for id in taken { results[id] = try start([id], slots: 1, claimed: &claimed, on: db)[id] }
        }
        return results
    }

    /// The transaction of `start`: the runs it claims are added to `claimed` once it commits.
    private func startTogether(_ ids: [Int64], claimed: inout [Claimed], on db: PGConnection) throws -> [Int64: Started] {
        let opened: [PGRows]
        do {
            opened = try db.pipeline([("BEGIN", []), FleetJournal.lockKeys(runs: ids), Self.startable(ids, incarnation: host.incarnation)])
        } catch {
            if db.isOK { try? db.execute("ROLLBACK") }
            throw error
        }
        do {
            let writes = try writeStarts(opened[2].rows, on: db)
            _ = try db.pipeline((writes.news ? [("NOTIFY baton", [])] : []) + [("COMMIT", [])])
            var results: [Int64: Started] = [:]
            claimed += writes.claimed
            for run in writes.claimed { results[run.run.id] = .started }
            // A run that came into a lock's line holds no slot: the slot comes back with the
            // look's (a host whose runs came into line this way twice with `maxConcurrentRuns: 2`
            // started nothing again when they kept theirs).
            for (id, waits) in writes.waiting where waits { results[id] = .waits }
            for id in ids where results[id] == nil { results[id] = .notStartable }
            return results
        } catch {
            if db.isOK { try? db.execute("ROLLBACK") }
            throw error
        }
    }

    /// What a start's transaction wrote before its commit: the runs it claimed (to hand to the
    /// conductor once it commits), the runs it put in a lock's line (true) or left (false), and
    /// whether the fleet must hear of it.
    struct StartWrites {
        var claimed: [Claimed] = []
        var waiting: [(Int64, Bool)] = []
        var news = false
    }

    /// In a transaction that holds the key rows of the runs in `rows` (`startable`'s columns):
    /// writes the `loading` of each run that may start, in one pipeline; the runs whose action
    /// claims locks, or that a hook made, are claimed after. Their lock rows all locked in name
    /// order first, then the rate-limited buckets (after every key row: the fleet's lock order);
    /// a run its rate limit holds back does not start (`rateHeld`).
    func writeStarts(_ rows: [[String?]], on db: PGConnection) throws -> StartWrites {
        var writes = StartWrites()
        var statements: [FleetJournal.Statement] = []
        var oneByOne: [(RunSnapshot, Int)] = []
        // What may start by its key, its window and its pause, its action looked up once.
        var ready: [(run: RunSnapshot, seq: Int, action: Action?)] = []
        for row in rows {
            let run = FleetRows.run(row)
            let facts = Self.startFacts(row)
            guard KeyDecision.mayStart(run.id, phase: run.phase, slot: facts.slot, windowPassed: facts.windowPassed,
                                       paused: facts.paused, approving: facts.approving) else { continue }
            ready.append((run, Int(row[FleetRows.runColumnCount] ?? "") ?? 1, conductor.action(named: run.action)))
        }
        // The lock rows of the runs that claim locks, then the rate-limited buckets: the fleet's lock order.
        let names = ready.flatMap { $0.action?.locks.map(\.name) ?? [] }
        if !names.isEmpty { _ = try db.pipeline(FleetLocks.lockRows(names)) }
        let held = try rateHeld(ready.map(\.run), on: db)
        for (run, seq, action) in ready where !held.contains(run.id) {
            guard let action, action.locks.isEmpty, run.hook == nil else {
                oneByOne.append((run, seq))
                continue
            }
            let loading = Transition(runID: run.id, seq: seq + 1, from: .queued, to: .loading, at: .now, detail: TransitionDetail(attempt: 1))
            statements += [FleetJournal.update(loading, as: host), try FleetJournal.insertTransition(loading)]
            writes.claimed.append(Claimed(run: run.applying(loading), seq: seq + 1, action: action))
        }
        let written = statements.isEmpty ? [] : try db.pipeline(statements)
        for (index, run) in writes.claimed.enumerated() where written[2 * index].affected != 1 {
            throw PGError(message: "run \(run.run.id) could not be started in its own transaction")
        }
        // A start or a cancel (its action gone) is news to the fleet; a place in line is not.
        writes.news = !writes.claimed.isEmpty
        for (run, seq) in oneByOne {
            switch try claim(run, seq: seq, on: db) {
            case let .claimed(claimed):
                writes.claimed.append(claimed)
                writes.news = true
            case .waits:
                writes.waiting.append((run.id, true))
            case .none:
                writes.waiting.append((run.id, false))
                writes.news = true
            }
        }
        return writes
    }

    /// What `KeyDecision.mayStart` decides a `startable` row on, by its columns: the key's slot after
    /// the run's columns and its last seq, whether its owner's window passed, its action's pause
    /// (`FleetPauses.joined`, as many columns as `joinedCount`), then whether it waits for its approval.
    static func startFacts(_ row: [String?]) -> (slot: KeySlot, windowPassed: Bool, paused: Bool, approving: Bool) {
        let base = FleetRows.runColumnCount
        let approval = base + 5 + FleetPauses.joinedCount
        return (KeySlot(row: Array(row[(base + 1)...(base + 3)])), row[base + 4] == "t", FleetPauses.holds(row, from: base + 5),
                row.count > approval && row[approval] == "t")
    }

    /// Each run with its last seq, its key's slot (holder, follow-up, draining), whether it may
    /// start by its owner and its window (`t`), its action's pause (`FleetPauses.joined`), and
    /// whether it waits for its approval (`t`, `FleetApprovals.waiting`): read once its key's row is held.
    static func startable(_ ids: [Int64], incarnation: String) -> FleetJournal.Statement {
        let columns = FleetRows.runColumnsOfR
        return ("""
            SELECT \(columns), r.last_seq, k.holder, k.follow_up, k.draining, (r.incarnation = $2 AND \(FleetDebounce.due)), \(FleetPauses.joined),
                   \(FleetApprovals.waiting)
            FROM runs r JOIN keys k ON k.key = r.key LEFT JOIN pauses p ON p.action = r.action LEFT JOIN approvals a ON a.run_id = r.id
            WHERE r.id = ANY ($1::bigint[]) AND \(FleetNeeds.met)
            """, ["{" + ids.map(String.init).joined(separator: ",") + "}", incarnation])
    }
}
