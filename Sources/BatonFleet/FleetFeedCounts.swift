import BatonCore
import Synchronization

/// What a host's feed delivered since batond started, for `/metrics` (`Metrics.follow(feed:)`):
/// transitions delivered from this host's own commits (`OwnCommit`), transitions read by
/// catch-ups, and the catch-ups' statements. Counted on the feed's thread, read at a scrape.
public final class FleetFeedCounts: Sendable {
    private let own = Atomic<Int>(0)
    private let read = Atomic<Int>(0)
    private let catchUps = Atomic<Int>(0)

    public init() {}

    public var figures: Metrics.FeedFigures {
        Metrics.FeedFigures(own: own.load(ordering: .relaxed), read: read.load(ordering: .relaxed),
                            catchUps: catchUps.load(ordering: .relaxed))
    }

    func delivered(own count: Int) { own.add(count, ordering: .relaxed) }

    /// One statement of a catch-up that read `count` transitions.
    func read(_ count: Int) {
        read.add(count, ordering: .relaxed)
        catchUps.add(1, ordering: .relaxed)
    }
}
