/// The conductor's store items go to the store at the end of the loop's turn, together and in the
/// order they were made: the writer is woken once for them and commits them in one group, where
/// items handed over one by one woke it for the first alone (a run's `loading` and another's end,
/// or a burst of triggers' creations, decided in one turn, were two commits or more). Nothing is
/// held past the turn: the answers still wait for their commit, no longer.
extension Conductor {
    struct UnsentWrite {
        var entries: [JournalEntry]
        var completion: @Sendable (Result<Void, BatonError>) -> Void
    }

    /// Queues `entries` as one store item, handed to the store at the end of this turn (on the loop).
    func write(_ entries: [JournalEntry], completion: @escaping @Sendable (Result<Void, BatonError>) -> Void) {
        let first = core.access { core -> Bool in
            core.unsent.append(UnsentWrite(entries: entries, completion: completion))
            return core.unsent.count == 1
        }
        if first { reactor.atTurnEnd { [self] in sendWrites() } }
    }

    /// Hands this turn's items to the store, in order.
    private func sendWrites() {
        let items = core.access { core -> [UnsentWrite] in
            defer { core.unsent.removeAll(keepingCapacity: true) }
            return core.unsent
        }
        for item in items { store.enqueue(item.entries, completion: item.completion) }
    }
}
