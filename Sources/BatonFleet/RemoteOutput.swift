import BatonCore
import Synchronization

/// Followers of the output of runs this host's conductor does not run (another host's): each
/// reads the chunks past its cursor from one of the pool's connections when the feed hears that
/// a host wrote output of the run (`baton_output`, `FeedWake`) or ended it, and `interval` after
/// its last read anyway (a loop timer, no thread waits: notifications can be lost), until a read
/// finds the run's end committed; its last chunks are committed before its end (the conductor
/// writes them first, in order), so that read has them all. One read in flight per follower, a
/// wake meanwhile asks for one more: chunks come in order, once. Its follows are the loop's: the
/// feed's wakes and the pool's reads are posted to it.
final class RemoteOutput: Sendable {
    /// The longest a chunk committed by another host waits to be read when no notification comes.
    static let interval: Duration = .milliseconds(250)
    /// The most bytes one read takes; a run with more waiting is read again at once.
    static let pageBytes = 1 << 20

    private struct Follow {
        var cursor: OutputCursor
        var follower: Conductor.OutputFollower
        /// The next read's timer, between reads.
        var timer: Reactor.TimerID?
        var reading = false
        /// Woken while reading (or before its timer was set): read again at once.
        var again = false
    }

    /// What one read found: chunks from the cursor, and whether they are all the run will have.
    struct Read: Sendable {
        var chunks: [OutputChunk]
        var ended: Bool
        var more: Bool
    }

    private struct Book {
        var follows: [Int: Follow] = [:]
    }

    private let pool: PGPool
    private let reactor: Reactor
    private let book: LoopOwned<Book>
    /// The last follow's id, handed out on whichever thread asks.
    private let lastID = Atomic<Int>(0)

    init(pool: PGPool, reactor: Reactor) {
        self.pool = pool
        self.reactor = reactor
        book = LoopOwned(Book(), on: reactor)
    }

    /// Starts following `run` from `offset` (on the loop, posted there from elsewhere); returns
    /// the follow's id, below zero (the conductor's ids are not, so that one stop call tells them apart).
    func add(run: Int64, from offset: Int64, _ follower: @escaping Conductor.OutputFollower) -> Int {
        let id = lastID.subtract(1, ordering: .relaxed).newValue
        reactor.onLoop { [self] in
            book.access { $0.follows[id] = Follow(cursor: OutputCursor(run: run, from: offset), follower: follower) }
            read(id)
        }
        return id
    }

    /// Stops a follow (its client went); its follower hears nothing more.
    func remove(_ id: Int) {
        reactor.onLoop { [self] in
            if let timer = book.access({ $0.follows.removeValue(forKey: id)?.timer }) { reactor.cancel(timer) }
        }
    }


    /// Output of these runs was committed, or they ended: their followers read now.
    func wake(_ runs: Set<Int64>) {
        guard !runs.isEmpty else { return }
        guard reactor.isCurrent else { return reactor.post { [self] in wake(runs) } }
        let due = book.access { book -> [(Int, Reactor.TimerID)] in
            var due: [(Int, Reactor.TimerID)] = []
            for (id, follow) in book.follows where runs.contains(follow.cursor.run) {
                if let timer = follow.timer, !follow.reading {
                    due.append((id, timer))
                    book.follows[id]?.timer = nil
                } else {
                    book.follows[id]?.again = true
                }
            }
            return due
        }
        for (id, timer) in due {
            reactor.cancel(timer)
            read(id)
        }
    }

    private func read(_ id: Int) {
        let cursor = book.access { book -> OutputCursor? in
            guard var follow = book.follows[id] else { return nil }
            guard !follow.reading else {
                book.follows[id]?.again = true
                return nil
            }
            (follow.reading, follow.again, follow.timer) = (true, false, nil)
            book.follows[id] = follow
            return follow.cursor
        }
        guard let cursor else { return }
        pool.submit({ db in try Self.read(cursor, on: db) }) { [self] result in
            reactor.post { [self] in
                switch result {
                case let .success(read): deliver(id, read)
                // PostgreSQL away: the next read tries again.
                case .failure: done(id, next: Self.interval)
                }
            }
        }
    }

    /// The run's phase first, then its chunks: when the phase read is an end, every chunk was
    /// committed before it, and the chunk read (a later statement) sees them.
    static func read(_ cursor: OutputCursor, on db: PGConnection) throws -> Read {
        let phase = try db.query("SELECT phase FROM runs WHERE id = $1", [String(cursor.run)]).first?[0].flatMap(Phase.init(rawValue:))
        // A run gone (pruned) has ended too.
        let ended = phase?.isTerminal ?? true
        let page = try FleetOutput.page(of: cursor.run, from: cursor.next, maxBytes: pageBytes, on: db)
        let chunks = page?.chunks ?? []
        let more = chunks.reduce(0) { $0 + $1.bytes.count } >= pageBytes
        return Read(chunks: chunks, ended: ended && !more, more: more)
    }

    /// Tells the follower what the read found (still marked reading, so that no other read's
    /// chunks pass these), then its end or the next read.
    private func deliver(_ id: Int, _ read: Read) {
        let found = book.access { book -> (Conductor.OutputFollower, [OutputChunk])? in
            guard var follow = book.follows[id] else { return nil }
            let chunks = follow.cursor.take(read.chunks)
            book.follows[id] = read.ended ? nil : follow
            return (follow.follower, chunks)
        }
        guard let (follower, chunks) = found else { return }
        for chunk in chunks { follower(chunk) }
        if read.ended { follower(nil) } else { done(id, next: read.more ? .zero : Self.interval) }
    }

    /// A read is over: the next one at once if woken meanwhile, else after `delay`.
    private func done(_ id: Int, next delay: Duration) {
        let again = book.access { book -> Bool? in
            guard book.follows[id] != nil else { return nil }
            book.follows[id]?.reading = false
            return book.follows[id]?.again
        }
        guard let again else { return }
        if again || delay == .zero { return read(id) }
        let timer = reactor.after(delay) { [self] in read(id) }
        book.access { $0.follows[id]?.timer = timer }
    }
}
