extension Conductor {
    /// The events waiting on the loop: one drain at a time handles them in order (an event sent
    /// while one is handled waits for it). The loop's, like the core.
    struct Inbox {
        var events: [ConductorState.Event] = []
        var head = 0
        var draining = false

        /// Queues an event while another is handled; true (nothing queued) when the caller must
        /// handle it now and drain what comes meanwhile: most events find the inbox empty, and are
        /// not copied into it and out again.
        mutating func push(_ event: ConductorState.Event) -> Bool {
            if draining {
                events.append(event)
                return false
            }
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
