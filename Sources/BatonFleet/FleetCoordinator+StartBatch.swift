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
            opened = try db.pipeline([("BEGIN", []), FleetJournal.lockKeys(runs: ids), Self.startable(ids)])
        } catch {
            if db.isOK { try? db.execute("ROLLBACK") }
            throw error
        }
        do {
            let writes = try writeStarts(opened[2].rows, on: db)
            let notifies = writes.news && company.notifies
            // This host's feed is handed what it committed (`OwnCommit`).
            let ask = company.ask(at: reactor.clock.now), asked = ask?.statements ?? []
            let closed = try db.pipeline((notifies ? [(company.notice, [])] : []) + asked + [("COMMIT", [])])
            company.committed(ask, closed.dropLast())
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

    /// In a transaction that holds the key rows of the runs in `rows` (`StartColumns`' rows):
    /// the engine's start rule chooses the runs that may start and the buckets they ask
    /// (`KeyDecision.starts`, its `Plan`); this takes the lock rows of the runs it chose (all
    /// locked in name order), then reads their rate-limited buckets (after every key row and lock
    /// row: the fleet's lock order, `readBuckets`); the engine decides on them
    /// (`KeyDecision.decide`), and this performs what it answers: each rate hold in its run's
    /// row, and the `loading` of each run it starts, in one pipeline; the runs whose action claims
    /// locks, or that a hook made, are claimed after.
    func writeStarts(_ rows: [[String?]], on db: PGConnection) throws -> StartWrites {
        var writes = StartWrites()
        var statements: [FleetJournal.Statement] = []
        var oneByOne: [(RunSnapshot, Int, Action?)] = []
        // Each row's run and its action, looked up once: the definition it was triggered with.
        var read: [Int64: (run: RunSnapshot, seq: Int, action: Action?)] = [:]
        var refused: [Int64: String] = [:]
        let facts = try rows.map { row in
            let decoded = try StartColumns.decode(row)
            let found = try lookUp(decoded.run.action, decoded.definition, on: db)
            let action = found.action
            if case let .refused(why) = found { refused[decoded.run.id] = why }
            read[decoded.run.id] = (decoded.run, decoded.seq, action)
            var facts = decoded.facts
            facts.rate = action?.rateClaim(key: decoded.run.key)
            return facts
        }
        let plan = KeyDecision.starts(facts, me: host.incarnation)
        var buckets: KeyDecision.Starts.Buckets?
        if !plan.rows.isEmpty {
            let names = plan.ready.flatMap { read[$0]?.action?.locks.map(\.name) ?? [] }
            if !names.isEmpty { _ = try db.pipeline(FleetLocks.lockRows(names)) }
            buckets = try readBuckets(plan.buckets.compactMapValues { read[$0].map { ($0.run, $0.action) } }, on: db)
        }
        let effects = KeyDecision.decide(plan, buckets)
        var holds: [FleetJournal.Statement] = []
        for effect in effects {
            switch effect {
            case let .holdRate(run, until):
                holds.append(("UPDATE runs SET rate_until = $2 WHERE id = $1", [String(run), String(until.rawValue)]))
            case let .start(id):
                guard let (run, seq, action) = read[id] else { continue }
                guard let action, action.locks.isEmpty, run.hook == nil else {
                    oneByOne.append((run, seq, action))
                    continue
                }
                let loading = Transition(runID: run.id, seq: seq + 1, from: .queued, to: .loading, at: .now, detail: TransitionDetail(attempt: 1))
                statements += [FleetJournal.update(loading, as: host), try FleetJournal.insertTransition(loading)]
                writes.claimed.append(Claimed(run: run.applying(loading), seq: seq + 1, action: action))
            }
        }
        if !holds.isEmpty { _ = try db.pipeline(holds) }
        let written = statements.isEmpty ? [] : try db.pipeline(statements)
        for (index, run) in writes.claimed.enumerated() where written[2 * index].affected != 1 {
            throw PGError(message: "run \(run.run.id) could not be started in its own transaction")
        }
        // A start or a cancel (its action gone) is news to the fleet; a place in line is not.
        writes.news = !writes.claimed.isEmpty
        for (run, seq, action) in oneByOne {
            switch try claim(run, seq: seq, action: action, refused: refused[run.id], on: db) {
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

    /// Each of `ids` with what its start is decided on (`StartColumns`), read once its key's row
    /// is held; the engine's start rule (`KeyDecision.starts`) decides each in `writeStarts`.
    static func startable(_ ids: [Int64]) -> FleetJournal.Statement {
        ("SELECT \(StartColumns.select.sql) \(StartColumns.from) WHERE r.id = ANY ($1::bigint[])",
         ["{" + ids.map(String.init).joined(separator: ",") + "}"])
    }
}
