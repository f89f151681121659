import BatonCore

extension History {
    /// The runs run `id` needs (`run_needs`, migration 12), in its action's order, each with its
    /// phase (and reason) now: one pruned since is told `cancelled`, reason `pruned`.
    public func needs(of id: Int64) throws -> [NeededRun] {
        try connection.withStatement("""
            SELECT n.action, n.needed_run_id, r.phase, r.reason FROM run_needs n LEFT JOIN runs r ON r.id = n.needed_run_id
            WHERE n.run_id = ? ORDER BY n.position
            """) { statement in
            try statement.bind([.integer(id)])
            var list: [NeededRun] = []
            while try statement.step() {
                let phase = statement.string(2).flatMap(Phase.init(rawValue:))
                list.append(NeededRun(action: statement.string(0) ?? "", run: statement.int64(1) ?? 0, phase: phase ?? .cancelled,
                                      reason: phase == nil ? "pruned" : statement.string(3)))
            }
            return list
        }
    }

    /// The runs that need run `id`, oldest first, each with its phase now.
    public func neededBy(_ id: Int64) throws -> [NeededRun] {
        try connection.withStatement("""
            SELECT r.action, r.id, r.phase, r.reason FROM run_needs n JOIN runs r ON r.id = n.run_id
            WHERE n.needed_run_id = ? ORDER BY r.id
            """) { statement in
            try statement.bind([.integer(id)])
            var list: [NeededRun] = []
            while try statement.step() {
                list.append(NeededRun(action: statement.string(0) ?? "", run: statement.int64(1) ?? 0,
                                      phase: statement.string(2).flatMap(Phase.init(rawValue:)) ?? .queued, reason: statement.string(3)))
            }
            return list
        }
    }

    /// A run with the runs it needs and the runs that need it, where there are any (`show`).
    func withNeeds(_ run: RunSnapshot) throws -> RunSnapshot {
        var run = run
        let needs = try needs(of: run.id), neededBy = try neededBy(run.id)
        run.needs = needs.isEmpty ? nil : needs
        run.neededBy = neededBy.isEmpty ? nil : neededBy
        return run
    }

    /// An unfinished run with the runs it waits for, as the history has them now.
    func withNeeds(_ unfinished: UnfinishedRun) throws -> UnfinishedRun {
        var unfinished = unfinished
        let needs = try needs(of: unfinished.run.id)
        unfinished.needs = needs.isEmpty ? nil : needs
        return unfinished
    }
}
