import BatonCore

extension FleetFeed {
    /// A commit of this host (`OwnCommit`), on the feed's thread: delivered from its own rows
    /// where nothing it may follow is undelivered (`FeedAhead`), as a catch-up that read it
    /// would deliver it; otherwise left to a catch-up, which a tick does now. Returns whether it
    /// delivered any (the caller then asks the loop for a look, as a tick does, once for several).
    static func deliverOwn(_ commit: OwnCommit, _ state: inout Connection, _ coordinator: FleetCoordinator) -> Bool {
        let verdict = state.ahead.admit(commit, position: state.position)
        coordinator.company.publish(state.ahead.mark(state.position))
        switch verdict {
        case .none: return false
        case .catchUp:
            askCatchUp(&state, coordinator)
            return false
        case .deliver: break
        }
        let rows = commit.decoded
        // A run made or queued again (its needs to ask), or ended (a wait it may decide).
        if rows.contains(where: { $0.transition.to == .queued || $0.transition.to.isTerminal }) { state.needsDue = true }
        for row in rows { state.handed.delivering(row.run.id) }
        deliver(rows, coordinator)
        coordinator.feedCounts.delivered(own: rows.count)
        // Every transaction committed before its statements were sent is delivered now.
        caughtUp(commit.began, &state, coordinator)
        // The needs read the fleet: a tick looks at them.
        if state.needsDue, FleetNeeds.configured(coordinator) { askCatchUp(&state, coordinator) }
        return true
    }

    /// Asks for a tick that catches up whatever the notifications it finds (`FeedWake`: this
    /// host's own ask for none).
    static func askCatchUp(_ state: inout Connection, _ coordinator: FleetCoordinator) {
        state.catchUpDue = true
        coordinator.company.poke()
    }
}
