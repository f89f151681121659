import BatonCore
import BatonIPC
import FoundationEssentials

/// The dashboard's one `watch` on batond, kept open for as long as the dashboard runs, on the
/// event loop: each update goes into the ring that every page's event stream reads, and the
/// streams are told. When batond goes away the feed says so (the pages show it) and connects
/// again, naming the last transition it had (`after`): what was committed meanwhile comes first.
/// Across a restart in place the ring goes on in the same epoch; after batond was gone (or where
/// the replay left some out) a new epoch has the pages load a fresh snapshot.
public final class Feed: Sendable {
    let channel: Channel
    private let reactor: Reactor
    /// The loop's, with no lock, as are the listeners.
    private let state: LoopOwned<View>
    private let listeners: LoopOwned<[@Sendable () -> Void]>
    /// The last transition the feed had (the loop's), or the time its first watch began.
    private let cursor: LoopOwned<WatchCursor?>

    /// What a stream reads: whether batond is there, why not, and the ring.
    struct View: Sendable {
        /// Whether the first watch has begun or failed: until then a page waits rather than hear "offline".
        var settled: Bool
        var online: Bool
        var offlineReason: String
        var ring: EventRing
    }

    public init(socketPath: String, reactor: Reactor) {
        channel = Channel(path: socketPath, reactor: reactor)
        self.reactor = reactor
        state = LoopOwned(View(settled: false, online: false, offlineReason: "connecting to batond", ring: EventRing(epoch: Feed.newEpoch())), on: reactor)
        listeners = LoopOwned([], on: reactor)
        cursor = LoopOwned(nil, on: reactor)
    }

    /// What streams read now (on the loop).
    var view: View { state.access { $0 } }

    /// Calls `listener` on the loop after every change of the view (registered there).
    func onChange(_ listener: @escaping @Sendable () -> Void) {
        reactor.onLoop { [self] in listeners.access { $0.append(listener) } }
    }

    /// Starts the feed's first watch (on the loop, whose the cursor is).
    public func start() { reactor.onLoop { [self] in watch(pause: .milliseconds(200)) } }

    /// Follows one watch; when it ends, says why and tries again, sooner after one that worked.
    private func watch(pause: Duration) {
        let after = cursor.access { $0 }
        channel.call(Request(op: .watch, progress: true, after: after), events: { [self] response, line in
            if response.event == "watching" {
                // Across a restart in place (the pages stayed online) the ring goes on, the replay in
                // it; after batond was gone (the pages said offline), or where the replay is not
                // whole, the pages start over from a fresh snapshot, as before.
                let whole = after != nil && (response.skipped ?? 0) == 0 && view.online
                cursor.access { $0 = $0 ?? WatchCursor(at: .now, run: 0, seq: 0) }
                change {
                    if !whole { $0.ring = EventRing(epoch: Self.newEpoch()) }
                    $0.online = true
                    $0.settled = true
                }
            } else if response.event == "update" {
                if let transition = response.transition {
                    cursor.access { $0 = max($0 ?? WatchCursor(transition), WatchCursor(transition)) }
                }
                // A transition, or (without one) progress a run reported.
                change { $0.ring.append(name: response.transition == nil ? "progress" : "update", data: String(decoding: line, as: UTF8.self), action: response.run?.action) }
            }
        }, done: { [self] result in
            // batond restarts in place: watched again at once (the connection waits in the socket's
            // backlog for the new batond); the pages stay online and read the new epoch.
            if case .failure(.restarting) = result {
                reactor.after(.milliseconds(50)) { [self] in watch(pause: pause) }
                return
            }
            let reason: String
            switch result {
            case let .success(response): reason = response.error.map { $0.code == .shuttingDown ? "batond is stopping" : $0.message } ?? "batond ended the watch"
            case let .failure(failure): reason = failure.message
            }
            let wasOnline = view.online
            change { $0.online = false; $0.offlineReason = reason; $0.settled = true }
            let next = wasOnline ? Duration.milliseconds(200) : min(pause * 2, .seconds(3))
            reactor.after(next) { [self] in watch(pause: next) }
        })
    }

    private func change(_ body: (inout View) -> Void) {
        state.access(body)
        for listener in listeners.access({ $0 }) { listener() }
    }

    static func newEpoch() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 36)
    }
}
