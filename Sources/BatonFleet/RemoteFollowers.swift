import BatonCore

/// Callers following runs through the fleet's feed (runs of other hosts, and runs of this host
/// not started by the trigger that follows them). Each hears the run as it was when it began to
/// follow, then every later transition once, in order, then nil after the run's end; the feed
/// and the catch-up read may both deliver a transition, and the seq drops the second. Owned by
/// the loop: the feed and the pool post what they read to it (`Reactor.onLoop`).
///
/// The feed delivers each run's transitions in order, to every follower. A catch-up read is
/// told to the one follower it was started for (`caughtUp`): a follower registered at an earlier
/// seq still waits for the feed's older transitions, which a later one would make it drop. While
/// a follower's catch-up is in flight, what the feed brings it is held, and told after what the
/// catch-up read (the feed may run ahead of a read that began before it); a catch-up that fails
/// is answered with nothing and releases what was held, so no follower waits on a read.
final class RemoteFollowers: Sendable {
    private struct Entry {
        var follower: Conductor.Follower
        var seq: Int
        /// What the feed brought while this follower's catch-up is in flight; nil when none is.
        var held: [RunUpdate]?
    }

    private struct Book {
        var entries: [Int64: [Int: Entry]] = [:]
        var nextID = 0
    }

    private let book: LoopOwned<Book>

    init(reactor: Reactor) {
        book = LoopOwned(Book(), on: reactor)
    }

    /// Starts following `run`, known as of transition `seq` (`catchingUp`: a catch-up read for it
    /// follows, answered by `caughtUp`); returns the follower's id (nil: the run had ended, and
    /// the follower heard its end).
    @discardableResult
    func add(_ run: RunSnapshot, seq: Int, catchingUp: Bool = false, _ follower: @escaping Conductor.Follower) -> Int? {
        follower(RunUpdate(run: run, transition: nil))
        if run.phase.isTerminal {
            follower(nil)
            return nil
        }
        return book.access { book in
            defer { book.nextID += 1 }
            book.entries[run.id, default: [:]][book.nextID] = Entry(follower: follower, seq: seq, held: catchingUp ? [] : nil)
            return book.nextID
        }
    }

    /// A committed transition of a followed run, from the feed: told to each follower that has
    /// not heard it (held for one whose catch-up is in flight).
    func deliver(_ update: RunUpdate) {
        guard let transition = update.transition else { return }
        let targets = book.access { book -> [Conductor.Follower] in
            guard var followers = book.entries[update.run.id] else { return [] }
            var due: [Conductor.Follower] = []
            for (id, entry) in followers where entry.seq < transition.seq {
                if entry.held != nil {
                    followers[id]?.held?.append(update)
                    continue
                }
                due.append(entry.follower)
                // A follower that heard the end hears nothing more.
                followers[id] = transition.to.isTerminal ? nil : Entry(follower: entry.follower, seq: transition.seq)
            }
            book.entries[update.run.id] = followers.isEmpty ? nil : followers
            return due
        }
        Self.tell(update, targets)
    }

    /// What the catch-up read for follower `run`'s `id` found (the transitions after its seq, in
    /// order; none when the read failed), told to it alone, then what the feed brought meanwhile.
    func caughtUp(_ run: Int64, _ updates: [RunUpdate], for id: Int) {
        let held = book.access { book -> [RunUpdate] in
            defer { book.entries[run]?[id]?.held = nil }
            return book.entries[run]?[id]?.held ?? []
        }
        for update in updates + held { deliver(update, to: id) }
    }

    /// One transition for follower `id` alone, unless it heard it.
    private func deliver(_ update: RunUpdate, to id: Int) {
        guard let transition = update.transition else { return }
        let target = book.access { book -> Conductor.Follower? in
            guard let entry = book.entries[update.run.id]?[id], entry.seq < transition.seq else { return nil }
            book.entries[update.run.id]?[id] = transition.to.isTerminal ? nil : Entry(follower: entry.follower, seq: transition.seq)
            if book.entries[update.run.id]?.isEmpty == true { book.entries[update.run.id] = nil }
            return entry.follower
        }
        Self.tell(update, target.map { [$0] } ?? [])
    }

    private static func tell(_ update: RunUpdate, _ followers: [Conductor.Follower]) {
        for follower in followers {
            follower(update)
            if update.transition?.to.isTerminal == true { follower(nil) }
        }
    }

    /// How many followers `run` has (tests).
    func count(of run: Int64) -> Int {
        book.access { $0.entries[run]?.count ?? 0 }
    }
}
