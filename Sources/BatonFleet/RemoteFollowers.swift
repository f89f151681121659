import BatonCore

/// Callers following runs through the fleet's feed (runs of other hosts, and runs of this host
/// not started by the trigger that follows them). Each hears the run as it was when it began to
/// follow, then every later transition once, in order, then nil after the run's end; the feed
/// and the catch-up read may both deliver a transition, and the seq drops the second. Owned by
/// the loop: the feed and the pool post what they read to it (`Reactor.onLoop`).
final class RemoteFollowers: Sendable {
    private struct Entry {
        var follower: Conductor.Follower
        var seq: Int
    }

    private struct Book {
        var entries: [Int64: [Int: Entry]] = [:]
        var nextID = 0
    }

    private let book: LoopOwned<Book>

    init(reactor: Reactor) {
        book = LoopOwned(Book(), on: reactor)
    }

    /// Starts following `run`, known as of transition `seq`; returns the follower's id.
    @discardableResult
    func add(_ run: RunSnapshot, seq: Int, _ follower: @escaping Conductor.Follower) -> Int {
        follower(RunUpdate(run: run, transition: nil))
        if run.phase.isTerminal {
            follower(nil)
            return -1
        }
        return book.access { book in
            defer { book.nextID += 1 }
            book.entries[run.id, default: [:]][book.nextID] = Entry(follower: follower, seq: seq)
            return book.nextID
        }
    }

    /// A committed transition of a followed run: told to each follower that has not heard it.
    func deliver(_ update: RunUpdate) {
        guard let transition = update.transition else { return }
        let targets = book.access { book -> [Conductor.Follower] in
            guard var followers = book.entries[update.run.id] else { return [] }
            var due: [Conductor.Follower] = []
            for (id, entry) in followers where entry.seq < transition.seq {
                due.append(entry.follower)
                followers[id]?.seq = transition.seq
            }
            book.entries[update.run.id] = transition.to.isTerminal ? nil : followers
            return due
        }
        for follower in targets {
            follower(update)
            if transition.to.isTerminal { follower(nil) }
        }
    }
}
