import BatonCore
import Synchronization

/// Whether another host of the fleet may be listening, and so whether this host's busiest commits
/// (a run's end and the starts after it, a trigger batch's new runs, a start) NOTIFY. Their news
/// is for the other hosts alone: this host's own feed is handed each of them in-process
/// (`committed`, `OwnCommit`), so a host alone in the fleet sends none, and its feed reads no
/// notification and catches up on none of its own commits (issue 39, item 4).
///
/// Company is known two ways, and either is enough: the lease's renewal counts the other hosts
/// not gone (every fifth of the lease; nil until the first answers: company assumed), and a host
/// whose feed connects greets the fleet (`FeedWake.hello`) once it listens, which every host's feed
/// hears at once and remembers for one lease (a renewal that read the hosts before the greeter
/// registered must not undo it). A commit that read "alone" just before a greeting reaches the
/// newcomer at its feed's next tick, at most a second later: its first tick began after it listened.
/// A batond of an earlier version greets nobody: a host alone learns of it at its next renewal, and
/// until then the newcomer hears that host's commits at its once-a-second tick.
public final class FleetCompany: Sendable {
    /// What this host has heard of the others, as a value.
    struct Heard: Equatable {
        /// Whether the last renewal found another host not gone; nil before the first.
        var atRenewal: Bool?
        /// When another host's feed last greeted the fleet.
        var greeted: ContinuousClock.Instant?

        /// Whether a commit at `now` notifies: unless the renewal found nobody and no greeting
        /// came within `lease`.
        func notifies(at now: ContinuousClock.Instant, lease: Duration) -> Bool {
            if atRenewal != false { return true }
            guard let greeted else { return false }
            return now - greeted < lease
        }
    }

    /// This host's feed, once it runs (`follow`): what `committed` hands a commit to, and what
    /// `poke` asks for a tick.
    private final class Teller: Sendable {
        let hand: @Sendable (OwnCommit) -> Void
        let poke: @Sendable () -> Void
        let catchUp: @Sendable () -> Void
        init(hand: @escaping @Sendable (OwnCommit) -> Void, poke: @escaping @Sendable () -> Void, catchUp: @escaping @Sendable () -> Void) {
            (self.hand, self.poke, self.catchUp) = (hand, poke, catchUp)
        }
    }

    let lease: Duration
    /// This host's NOTIFY, its incarnation the payload (`notify`).
    let notice: String
    /// What the last renewal found (`Heard.atRenewal`): 0 nothing yet, 1 no other host, 2 another.
    /// Atomics, not a lock: the writer's, the trigger queue's, the lease's and the feed's threads
    /// each read or write one value, and no decision needs the two at once.
    private let atRenewal = Atomic<Int8>(0)
    /// When another host's feed last greeted the fleet, in nanoseconds after `origin` (0: never).
    private let greetedAt = Atomic<Int64>(0)
    private let origin = ContinuousClock.now
    private let ownFeed = AtomicLazyReference<Teller>()
    /// Written by the feed's thread, read by every committer's as it asks (`ask`).
    private let published = Locked<FeedAhead.Mark?>(nil)

    /// The company of `host`, which has heard nothing yet: it notifies until a renewal finds it alone.
    public init(_ host: FleetHost) {
        lease = host.lease
        notice = Self.notify(host.incarnation)
    }

    /// The NOTIFY of a commit of host `incarnation`, which it names (a quote doubled, as SQL's literals have it).
    static func notify(_ incarnation: String) -> String {
        "NOTIFY baton, '" + String(incarnation.flatMap { $0 == "'" ? ["'", "'"] : [$0] }) + "'"
    }

    /// What this host has heard so far.
    var heard: Heard {
        let renewal = atRenewal.load(ordering: .relaxed), greeted = greetedAt.load(ordering: .relaxed)
        return Heard(atRenewal: renewal == 0 ? nil : renewal == 2,
                     greeted: greeted == 0 ? nil : origin + .nanoseconds(greeted))
    }

    /// Whether a commit now notifies the other hosts.
    var notifies: Bool { heard.notifies(at: .now, lease: lease) }

    /// A renewal found other hosts not gone (`true`) or none.
    func renewed(others: Bool) { atRenewal.store(others ? 2 : 1, ordering: .relaxed) }

    /// Another host's feed greeted the fleet.
    func greeted() {
        let (seconds, attoseconds) = (ContinuousClock.now - origin).components
        greetedAt.store(max(1, seconds * 1_000_000_000 + attoseconds / 1_000_000_000), ordering: .relaxed)
    }

    /// From now on this host's commits go to `hand`, `poke` asks its feed for a tick, and
    /// `catchUp` for one that catches up (the first feed's; a host has one).
    func follow(hand: @escaping @Sendable (OwnCommit) -> Void, poke: @escaping @Sendable () -> Void,
                catchUp: @escaping @Sendable () -> Void) {
        _ = ownFeed.storeIfNil(Teller(hand: hand, poke: poke, catchUp: catchUp))
    }

    /// Whether a commit is handed to this host's feed (one follows).
    var followed: Bool { ownFeed.load() != nil }

    /// What a commit of this host asks for its feed, in its COMMIT's round trip (`OwnCommit.Ask`),
    /// from the mark the feed published last; nil where no feed follows. `began`: now, on the loop's clock.
    func ask(at began: ContinuousClock.Instant) -> OwnCommit.Ask? {
        guard followed else { return nil }
        return OwnCommit.Ask(mark: published.withLock { $0 }, began: began)
    }

    /// The feed's mark, for its committers' next asks (nil: they ask for a catch-up instead).
    func publish(_ mark: FeedAhead.Mark?) { published.withLock { $0 = mark } }

    /// After a commit of this host, notifying or not, with its closing results (those of `ask`'s
    /// statements last, the COMMIT's left out): its feed delivers it (its waits and watchers hear
    /// of it through the feed), or catches up.
    func committed(_ ask: OwnCommit.Ask?, _ closing: some BidirectionalCollection<PGRows>) {
        guard let ask else { return }
        switch OwnCommit.read(ask, closing.suffix(ask.statements.count)) {
        case let .commit(commit): ownFeed.load()?.hand(commit)
        case .nothing: return
        // A tick that catches up whatever the notifications it finds (this host's own ask for none).
        case .unread: ownFeed.load()?.catchUp()
        }
    }

    /// Asks this host's feed for a tick (a catch-up).
    func poke() { ownFeed.load()?.poke() }
}
