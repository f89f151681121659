import BatonCore
import FoundationEssentials

/// The keeps of artifacts waiting for PostgreSQL to come back (`FleetArtifacts`), as one value
/// owned by the loop: `handle(event) -> [effect]`, performed by the keeper. Each keep waits for
/// its timer, then is tried again; a stop gives every waiting keep up at once, and any keep that
/// fails after it gives up at once. `Keep` is what a try needs (the keeper's `Retry`).
struct KeepRetries<Keep: Sendable>: Sendable {
    private(set) var next = 0
    /// The keeps waiting for their timer, by the timer's key.
    private(set) var waiting: [Int: Keep] = [:]
    /// Batond stops: nothing is tried again.
    private(set) var stopped = false

    enum Event: Sendable {
        /// A keep failed for PostgreSQL: tried again after `after`.
        case wait(Keep, after: Duration)
        /// The timer of the keep waiting under `key` fired.
        case fired(Int)
        /// Batond stops (`stopRetrying`).
        case stop
    }

    enum Effect: Sendable {
        /// Arm a timer for the keep, which fires `fired(key)`.
        case arm(Int, Keep, after: Duration)
        /// Try the keep again.
        case retry(Keep)
        /// End the keep without its files; `stopping`: because batond stops (it was waiting).
        case giveUp(Keep, stopping: Bool)
    }

    mutating func handle(_ event: Event) -> [Effect] {
        switch event {
        case let .wait(keep, after):
            guard !stopped else { return [.giveUp(keep, stopping: false)] }
            next += 1
            waiting[next] = keep
            return [.arm(next, keep, after: after)]
        case let .fired(key):
            // Given up meanwhile (a stop): nothing left to do.
            guard let keep = waiting.removeValue(forKey: key) else { return [] }
            return [.retry(keep)]
        case .stop:
            stopped = true
            defer { waiting = [:] }
            return waiting.keys.sorted().map { .giveUp(waiting[$0]!, stopping: true) }
        }
    }
}

extension KeepRetries.Effect: Equatable where Keep: Equatable {}

extension FleetArtifacts {
    /// What a keep needs to be tried again, or given up.
    struct Retry: Sendable {
        var found: ArtifactScan
        var run: Int64
        var attempt: Int
        var tries: Int
        var since: ContinuousClock.Instant
        /// Why its last try failed.
        var error: String
        var done: @Sendable () -> Void
    }

    /// Hands `event` to the retries' state on the loop and performs its effects there, no lock held.
    func retrying(_ event: KeepRetries<Retry>.Event) {
        guard let retries else { return }
        retries.reactor.onLoop { [self] in
            for effect in retries.access({ $0.handle(event) }) { perform(effect) }
        }
    }

    private func perform(_ effect: KeepRetries<Retry>.Effect) {
        switch effect {
        case let .arm(key, retry, after):
            log("the artifacts of run \(retry.run) (attempt \(retry.attempt)) wait for PostgreSQL (\(retry.error)): tried again in \(after), the run ending after")
            later(after) { [self] in retrying(.fired(key)) }
        case let .retry(retry):
            keep(retry.found, run: retry.run, attempt: retry.attempt, tries: retry.tries + 1, since: retry.since, done: retry.done)
        case let .giveUp(retry, stopping):
            // A stop, or PostgreSQL down past the retries: the run is told first (`giveUp`).
            giveUp(run: retry.run, attempt: retry.attempt, stopping ? "batond is stopping (\(retry.error))" : retry.error, toldFirst: true, done: retry.done)
        }
    }
}
