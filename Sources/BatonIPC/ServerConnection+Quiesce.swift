import BatonCore

/// A restart in place (docs/architecture.md, "Restart in place"; docs/protocol.md, "restarting"):
/// the server stops reading every connection at once, so the requests it took are exactly those
/// read so far. Each of them is answered as usual (a trigger's commit included); a request that
/// follows a stream (`park`: a run's end, a watch, live output) is answered as far as it got.
/// Then the connection's last line, `{"restarting":true}`, says that batond takes nothing more on
/// it: a request the client sent that has no answer before that line was never read, and may be
/// sent again to the new batond without running anything twice.
extension ServerConnection {
    /// The last line a connection gets when batond restarts in place.
    public static let restartingLine = Array(#"{"restarting":true}"#.utf8)

    /// A request in flight now follows a stream, after at least one line of it went out (a
    /// run's update, "watching"): a restart may end it with its last line.
    public func park() {
        guard reactor.isCurrent else { return reactor.post { [self] in park() } }
        state.access { $0.parked += 1 }
        settleIfQuiet()
    }

    /// The stream ends as usual (its final answer follows): the request is no longer parked.
    /// Once per `park` (`Exchange` keeps the flag): an unpark too many is a bug, not clamped away
    /// (a count left too high seals a connection while a trigger is still being committed).
    public func unpark() {
        guard reactor.isCurrent else { return reactor.post { [self] in unpark() } }
        let parked = state.access { state -> Int in
            state.parked -= 1
            return state.parked
        }
        assert(parked >= 0, "unpark without park")
    }

    /// Stops reading (loop): the connection ends once every request taken is answered but those parked.
    /// A half line buffered now is never finished (nothing more is read): it is forgotten, so the
    /// slow-request sweep does not close the connection (`bad_request`) under its taken requests.
    func quiesce() {
        let open = state.access { state -> Bool in
            guard !state.closed else { return false }
            state.quiescing = true
            state.partialSince = nil
            return true
        }
        guard open else { return }
        watch()
        settleIfQuiet()
    }

    /// Once quiescing with only parked requests left (loop): the last line, then the close once written.
    func settleIfQuiet() {
        let settle = state.access { state -> Bool in
            state.quiescing && !state.sealed && !state.closed && state.inFlight <= state.parked
        }
        guard settle else { return }
        send(Self.restartingLine)
        state.access { $0.sealed = true }
        closeWhenWritten()
    }
}
