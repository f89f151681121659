import BatonCore

/// Callers following runs through the fleet's feed (runs of other hosts, and runs of this host
/// not started by the trigger that follows them). Each hears the run as it was when it began to
/// follow, then every later transition once, in order, then nil after the run's end; the feed
/// and the catch-up read may both deliver a transition, and the seq drops the second.
final class RemoteFollowers: Sendable {
    private struct Entry {
        var follower: Conductor.Follower
        var seq: Int
    }

    private let entries = Locked<[Int64: [Int: Entry]]>([:])
    private let nextID = Locked(0)

    /// Starts following `run`, known as of transition `seq`; returns the follower's id.
    @discardableResult
    func add(_ run: RunSnapshot, seq: Int, _ follower: @escaping Conductor.Follower) -> Int {
        follower(RunUpdate(run: run, transition: nil))
        if run.phase.isTerminal {
            follower(nil)
            return -1
        }
        let id = nextID.withLock { id in defer { id += 1 }; return id }
        entries.withLock { $0[run.id, default: [:]][id] = Entry(follower: follower, seq: seq) }
        return id
    }

    /// Whether anyone follows `run`.
    func isFollowed(_ run: Int64) -> Bool { entries.withLock { $0[run]?.isEmpty == false } }

    /// A committed transition of a followed run: told to each follower that has not heard it.
    func deliver(_ update: RunUpdate) {
        guard let transition = update.transition else { return }
        let targets = entries.withLock { all -> [Conductor.Follower] in
            guard var followers = all[update.run.id] else { return [] }
            var due: [Conductor.Follower] = []
            for (id, entry) in followers where entry.seq < transition.seq {
                due.append(entry.follower)
                followers[id]?.seq = transition.seq
            }
            if transition.to.isTerminal { all[update.run.id] = nil } else { all[update.run.id] = followers }
            return due
        }
        for follower in targets {
            follower(update)
            if transition.to.isTerminal { follower(nil) }
        }
    }

    /// Ends every stream (batond stops).
    func closeAll() {
        let all = entries.withLock { all in defer { all = [:] }; return all }
        for followers in all.values { for entry in followers.values { entry.follower(nil) } }
    }
}
