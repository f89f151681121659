/// The conductor's store items go to the store at the end of the loop's turn, together and in the
/// order they were made: the writer is woken once for them and commits them in one group, where
/// items handed over one by one woke it for the first alone (a run's `loading` and another's end,
/// or a burst of triggers' creations, decided in one turn, were two commits or more). Nothing is
/// held past the turn: the answers still wait for their commit, no longer. A long turn (hundreds of
/// pipelined requests read at once) hands over every `handOverEvery` items, so that the writer
/// commits while the loop goes on, as it did when each item went at once; an item that ends runs
/// goes at once, with those made before it.
///
/// One kind of item waits longer: the process group of a started attempt that no later batond could
/// adopt (no shim: `survivesRestart: false`, a hook's run, a terminal's, another user's), which
/// nobody waits for and only recovery after a crash reads, to kill what is left, which the cgroup or
/// the environment tag finds without it. It rides with the next item the loop hands over, or goes
/// after `Options.processGroupWait`, so that a short run's process group and end may share a commit
/// (issue 39, item 3). A shim's process group goes as any item: adoption after a crash needs it.
extension Conductor {
    static let handOverEvery = 16

    struct UnsentWrite {
        var entries: [JournalEntry]
        var completion: @Sendable (Result<Void, BatonError>) -> Void
        /// Only process groups of attempts no later batond could adopt: may wait for the next item.
        var rides = false
    }

    /// Queues `entries` as one store item, handed to the store at the end of this turn (on the loop).
    func write(_ entries: [JournalEntry], completion: @escaping @Sendable (Result<Void, BatonError>) -> Void) {
        var write = UnsentWrite(entries: entries, completion: completion)
        write.rides = !entries.isEmpty && entries.allSatisfy { entry in
            guard case let .processGroup(run, _, _) = entry else { return false }
            return core.access { $0.attempts[run] }?.adoptable == false
        }
        let (count, armTurnEnd, armRider) = core.access { core -> (Int, Bool, Bool) in
            core.unsent.append(write)
            let armRider = write.rides && !core.riderArmed
            if armRider { core.riderArmed = true }
            let armTurnEnd = !write.rides && !core.turnEndArmed
            if armTurnEnd { core.turnEndArmed = true }
            return (core.unsent.count, armTurnEnd, armRider)
        }
        if armTurnEnd { reactor.atTurnEnd { [self] in sendWrites() } }
        if armRider { reactor.after(options.processGroupWait) { [weak self] in self?.ridersWaited() } }
        // An item that ends runs goes at once (with those before it): a fleet's writer reserves the
        // start slots the ends free as it is handed the item, before the feed, which sees the slots
        // free from now on, could take them for starts of its own.
        if count >= Self.handOverEvery || entries.contains(where: \.isEnd) { sendWrites() }
    }

    /// Hands the waiting items to the store, in order (at the turn's end, and before anyone is told
    /// the conductor has drained: what batond writes before it exits is in the store's queue by then).
    func sendWrites() {
        let items = core.access { core -> [UnsentWrite] in
            core.turnEndArmed = false
            defer { core.unsent.removeAll(keepingCapacity: true) }
            return core.unsent
        }
        for item in items { store.enqueue(item.entries, completion: item.completion) }
    }

    /// `processGroupWait` passed since a process group began to wait: whatever waits goes now.
    private func ridersWaited() {
        let waiting = core.access { core -> Bool in
            core.riderArmed = false
            return !core.unsent.isEmpty
        }
        if waiting { sendWrites() }
    }
}
