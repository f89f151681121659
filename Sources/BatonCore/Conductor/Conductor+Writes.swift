/// The conductor's store items go to the store at the end of the loop's turn, together and in the
/// order they were made: the writer is woken once for them and commits them in one group, where
/// items handed over one by one woke it for the first alone (a run's `loading` and another's end,
/// or a burst of triggers' creations, decided in one turn, were two commits or more). Nothing is
/// held past the turn: the answers still wait for their commit, no longer. A long turn (hundreds of
/// pipelined requests read at once) hands over every `handOverEvery` items, so that the writer
/// commits while the loop goes on, as it did when each item went at once; an item that ends runs
/// goes at once, with those made before it.
extension Conductor {
    static let handOverEvery = 16

    struct UnsentWrite {
        var entries: [JournalEntry]
        var completion: @Sendable (Result<Void, BatonError>) -> Void
    }

    /// Queues `entries` as one store item, handed to the store at the end of this turn (on the loop).
    func write(_ entries: [JournalEntry], completion: @escaping @Sendable (Result<Void, BatonError>) -> Void) {
        let count = core.access { core -> Int in
            core.unsent.append(UnsentWrite(entries: entries, completion: completion))
            return core.unsent.count
        }
        if count == 1 { reactor.atTurnEnd { [self] in sendWrites() } }
        // An item that ends runs goes at once (with those before it): a fleet's writer reserves the
        // start slots the ends free as it is handed the item, before the feed, which sees the slots
        // free from now on, could take them for starts of its own.
        if count >= Self.handOverEvery || entries.contains(where: \.isEnd) { sendWrites() }
    }

    /// Calls `done` (on the store's thread) once every item the conductor queued before this call
    /// is committed or refused: an item of nothing after them, in their order. On the loop. A fleet
    /// reads its rows after it to tell a run this conductor ended from one it never held.
    public func afterWrites(_ done: @escaping @Sendable () -> Void) {
        reactor.assertOnLoop("the conductor's writes")
        write([]) { _ in done() }
    }

    /// Hands this turn's items to the store, in order (at the turn's end, and before anyone is told
    /// the conductor has drained: what batond writes before it exits is in the store's queue by then).
    func sendWrites() {
        let items = core.access { core -> [UnsentWrite] in
            defer { core.unsent.removeAll(keepingCapacity: true) }
            return core.unsent
        }
        for item in items { store.enqueue(item.entries, completion: item.completion) }
    }
}
