extension Conductor {
    /// The events waiting on the loop: one drain at a time handles them in order (an event sent
    /// while one is handled waits for it). The loop's, like the core.
    struct Inbox {
        var events: [ConductorState.Event] = []
        var head = 0
        var draining = false

        /// Adds an event; true when the caller must drain (nobody else is).
        mutating func push(_ event: ConductorState.Event) -> Bool {
            events.append(event)
            if draining { return false }
            draining = true
            return true
        }

        /// The next event, or nil (and no longer draining) when there is none.
        mutating func pop() -> ConductorState.Event? {
            guard head < events.count else {
                events.removeAll(keepingCapacity: events.capacity <= 1_024)
                head = 0
                draining = false
                return nil
            }
            defer { head += 1 }
            return events[head]
        }
    }
}
