import FoundationEssentials
import Glibc

/// Waiting for batond to come back once it said it takes nothing more (`{"restarting":true}`: a
/// restart in place, or a stop that systemd or someone follows with a start): while batond cannot
/// be reached, connect again with a growing pause, for at most `bound` in a row. Under socket
/// activation (and across a restart in place) the socket stays and the new batond answers from
/// its backlog; without it, the socket is gone until the next batond listens again.
struct Reconnect {
    /// How long a command waits for batond to come back.
    static let bound = Duration.seconds(30)
    static let firstPause = Duration.milliseconds(50)
    static let longestPause = Duration.seconds(1)

    private let clock = ContinuousClock()
    private var since: ContinuousClock.Instant?
    private var pause = Self.firstPause
    let bound: Duration

    init(bound: Duration = Self.bound) { self.bound = bound }

    /// batond was reached (an answer, a line of a stream): a later loss counts from then.
    mutating func reached() {
        since = nil
        pause = Self.firstPause
    }

    /// batond could not be reached, or ended the connection: after a pause, true while within the
    /// bound (counted from the first loss since batond was last reached), else false.
    mutating func again() -> Bool {
        let now = clock.now
        let first = since ?? now
        since = first
        guard now - first < bound else { return false }
        let (seconds, attoseconds) = pause.components
        usleep(useconds_t(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
        pause = min(pause * 2, Self.longestPause)
        return true
    }

    /// What a command says when batond did not come back within the bound.
    static func gone(socket: String, bound: Duration = Self.bound, _ reason: String) -> String {
        "batond did not come back within \(bound.components.seconds)s at \(socket): \(reason)"
    }
}
