/// Where a host's feed is in the fleet's transitions, without a lock that makes ids commit in
/// order (schema version 9). Writers to different keys commit in any order, and a transaction
/// may take its transition ids long before it commits; so the feed does not follow ids, it
/// follows snapshots. `seen` is the snapshot it last read up to (PostgreSQL's
/// `pg_current_snapshot()`): every transaction that snapshot sees as finished has been
/// delivered. A catch-up takes a new snapshot `target` and delivers, in id order, exactly the
/// transitions whose writing transaction (`transitions.xid`) `seen` did not see and `target`
/// does (`xid >= seen.xmax OR xid IN seen.inProgress`, and visible in `target`); then `target`
/// becomes `seen`.
///
/// Why that is every transition exactly once: a transaction's rows become visible all at once,
/// at its commit, and stay visible; snapshots taken later see more. So each committed row is in
/// the delta of exactly one pair of consecutive snapshots: the first that sees it. A long
/// transaction that took its ids early and commits late is in `inProgress` of every snapshot
/// until it commits, and is delivered by the first catch-up after.
///
/// Why each key's transitions come in order: every transaction that writes a key's transitions
/// locks the key's slot row first (`FOR UPDATE`, several keys in key order), and a transaction
/// that waits for a row lock proceeds only once the holder's commit is visible to every later
/// snapshot. So of two transactions A then B on one key, B's ids are taken after A committed
/// (B's are larger) and any snapshot that sees B sees A: A is delivered before B, or with it and
/// ahead of it in id order.
///
/// A catch-up reads at most `page` rows a statement: a full page leaves `reading` set (the
/// target and the last id delivered), and the next statement reads on from it with the same
/// target, in whatever snapshot of its own, so that what a page delivered is never read again.
struct FeedPosition: Equatable, Sendable {
    static let page = 500

    var seen: FeedSnapshot
    /// A catch-up that read a full page: its target and the last id it delivered.
    var reading: (target: FeedSnapshot, after: Int64)?

    init(seen: FeedSnapshot) { self.seen = seen }

    static func == (a: FeedPosition, b: FeedPosition) -> Bool {
        a.seen == b.seen && a.reading?.target == b.reading?.target && a.reading?.after == b.reading?.after
    }

    /// The parameters of `FleetFeed.catchUpQuery`: $1 seen's xmax, $2 seen's transactions in
    /// progress, $3 the target (NULL: the statement's own snapshot), $4 the id to read after, $5
    /// the transactions to leave out (delivered ahead: `FeedAhead`).
    func parameters(excluding: [UInt64] = []) -> [String?] {
        [String(seen.xmax), Self.array(seen.inProgress), reading?.target.text, String(reading?.after ?? 0), Self.array(excluding)]
    }

    private static func array(_ ids: [UInt64]) -> String { "{" + ids.map(String.init).joined(separator: ",") + "}" }

    /// After a page of `count` rows read up to `target`, the last of them `lastID`.
    mutating func read(_ count: Int, target: FeedSnapshot, lastID: Int64?) {
        if count >= Self.page, let lastID {
            reading = (target, lastID)
        } else {
            seen = target
            reading = nil
        }
    }

    /// Whether the last page was full (another is to be read now).
    var midway: Bool { reading != nil }
}

/// A snapshot as `pg_current_snapshot()::text` writes it: `xmin:xmax:xip,xip,…`.
struct FeedSnapshot: Equatable, Sendable {
    var text: String
    var xmin: UInt64
    var xmax: UInt64
    var inProgress: [UInt64]

    init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, let xmin = UInt64(parts[0]), let xmax = UInt64(parts[1]), xmin <= xmax else { return nil }
        let list = parts[2].isEmpty ? [] : parts[2].split(separator: ",", omittingEmptySubsequences: false).map { UInt64($0) }
        guard !list.contains(nil) else { return nil }
        self.text = text
        self.xmin = xmin
        self.xmax = xmax
        inProgress = list.compactMap { $0 }.sorted()
    }

    /// Whether transaction `xid` had finished when the snapshot was taken (`pg_visible_in_snapshot`):
    /// a binary search of those in progress (kept sorted).
    func sees(_ xid: UInt64) -> Bool {
        guard xid >= xmin else { return true }
        guard xid < xmax else { return false }
        var (low, high) = (0, inProgress.count)
        while low < high {
            let middle = (low + high) / 2
            if inProgress[middle] < xid { low = middle + 1 } else { high = middle }
        }
        return low == inProgress.count || inProgress[low] != xid
    }
}
