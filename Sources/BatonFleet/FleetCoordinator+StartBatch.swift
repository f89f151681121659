import BatonCore
import FoundationEssentials

/// Queued runs of this host started together: one transaction locks their key rows (in key
/// order) and reads each run with its key's slot and whether its window has passed, in the round
/// trip of its BEGIN; then writes the `loading` of every run that may start, NOTIFY and COMMIT in
/// one pipeline. A run whose action claims locks, or that a hook made, is claimed after the key
/// rows (its lock rows, all the batch's in name order, then `claim`), in the same transaction.
extension FleetCoordinator {
    /// Starts the queued runs `ids` of this host that hold a free key (as many as start slots
    /// are free; the others `noSlot`). A unique violation (another run of a key is loading,
    /// whatever this host believed) starts each alone: that one is "not yet", the others start.
    func start(_ ids: [Int64], on db: PGConnection) throws -> [Int64: Started] {
        var results: [Int64: Started] = [:]
        var taken: [Int64] = []
        for id in ids {
            if reserveStart() { taken.append(id) } else { results[id] = .noSlot }
        }
        guard !taken.isEmpty else { return results }
        do {
            for (id, started) in try startTogether(taken, on: db) { results[id] = started }
        } catch let error as PGError where error.isUniqueViolation {
            if taken.count == 1 {
                releaseStart()
                log("run \(taken[0]) could not start yet: \(error.message)")
                results[taken[0]] = .notStartable
                return results
            }
            for _ in taken { releaseStart() }
            for id in taken { results[id] = try start([id], on: db)[id] }
        } catch {
            for _ in taken { releaseStart() }
            throw error
        }
        return results
    }

    /// The transaction of `start`: each run in `ids` holds a start slot, handed to the conductor
    /// with its run or given back.
    private func startTogether(_ ids: [Int64], on db: PGConnection) throws -> [Int64: Started] {
        let opened: [PGRows]
        do {
            opened = try db.pipeline([("BEGIN", []), FleetJournal.lockKeys(runs: ids), Self.startable(ids, incarnation: host.incarnation)])
        } catch {
            if db.isOK { try? db.execute("ROLLBACK") }
            throw error
        }
        do {
            var results: [Int64: Started] = [:]
            var statements: [FleetJournal.Statement] = []
            var claimed: [Claimed] = []
            var oneByOne: [(RunSnapshot, Int)] = []
            for row in opened[2].rows {
                let run = FleetRows.run(row)
                let seq = Int(row[FleetRows.runColumnCount] ?? "") ?? 1
                let slot = KeySlot(row: Array(row[(FleetRows.runColumnCount + 1)...(FleetRows.runColumnCount + 3)]))
                guard run.phase == .queued, slot.startable == run.id, row[FleetRows.runColumnCount + 4] == "t" else { continue }
                guard let action = conductor.action(named: run.action), action.locks.isEmpty, run.hook == nil else {
                    oneByOne.append((run, seq))
                    continue
                }
                let loading = Transition(runID: run.id, seq: seq + 1, from: .queued, to: .loading, at: .now, detail: TransitionDetail(attempt: 1))
                statements += [FleetJournal.update(loading, as: host), try FleetJournal.insertTransition(loading)]
                claimed.append(Claimed(run: run.applying(loading), seq: seq + 1, action: action))
            }
            let written = statements.isEmpty ? [] : try db.pipeline(statements)
            for (index, run) in claimed.enumerated() where written[2 * index].affected != 1 {
                throw PGError(message: "run \(run.run.id) could not be started in its own transaction")
            }
            var attempts: [(Int64, Attempt)] = []
            let names = oneByOne.flatMap { conductor.action(named: $0.0.action)?.locks.map(\.name) ?? [] }
            if !names.isEmpty { _ = try db.pipeline(FleetLocks.lockRows(names)) }
            for (run, seq) in oneByOne { attempts.append((run.id, try claim(run, seq: seq, on: db))) }
            // A start or a cancel (its action gone) is news to the fleet; a place in line is not.
            let news = !claimed.isEmpty || attempts.contains { if case .waits = $0.1 { false } else { true } }
            _ = try db.pipeline((news ? [("NOTIFY baton", [])] : []) + [("COMMIT", [])])
            for run in claimed {
                hand(run, follower: nil)
                results[run.run.id] = .started
            }
            for (id, attempt) in attempts {
                switch attempt {
                case let .claimed(run):
                    hand(run, follower: nil)
                    results[id] = .started
                case .waits:
                    results[id] = .waits
                case .none:
                    break
                }
            }
            for id in ids where results[id] == nil {
                releaseStart()
                results[id] = .notStartable
            }
            return results
        } catch {
            if db.isOK { try? db.execute("ROLLBACK") }
            throw error
        }
    }

    /// Each run with its last seq, its key's slot (holder, follow-up, draining) and whether it
    /// may start by its owner and its window (`t`): read once its key's row is held.
    static func startable(_ ids: [Int64], incarnation: String) -> FleetJournal.Statement {
        let columns = FleetRows.runColumns.split(separator: ",").map { "r." + $0.trimmingWhitespace() }.joined(separator: ", ")
        return ("""
            SELECT \(columns), r.last_seq, k.holder, k.follow_up, k.draining, (r.incarnation = $2 AND \(FleetDebounce.due))
            FROM runs r JOIN keys k ON k.key = r.key WHERE r.id = ANY ($1::bigint[])
            """, ["{" + ids.map(String.init).joined(separator: ",") + "}", incarnation])
    }
}
