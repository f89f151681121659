import BatonCore
import BatonIPC
import Dispatch
import Foundation

/// The dashboard's one `watch` on batond, kept open for as long as the dashboard runs: each update
/// goes into the ring that every page's event stream reads. When batond goes away the feed says
/// so (the pages show it) and connects again, with a new epoch.
///
/// The watch is the one job of a worker of its own (its reads block); when a watch ends the job
/// is handed back for a retry after a pause that grows while batond stays away.
public final class Feed: Sendable {
    let link: BatondLink

    /// What a stream reads: whether batond is there, why not, and the ring.
    struct View {
        /// Whether the first watch has begun or failed: until then a page waits rather than hear "offline".
        var settled = false
        var online = false
        var offlineReason = "connecting to batond"
        var ring = EventRing(epoch: Feed.newEpoch())
    }

    private struct Shared {
        var view = View()
        /// Streams waiting for the view to change, each woken once.
        var waiters: [ObjectIdentifier: DispatchSemaphore] = [:]
    }

    private struct Watch: Sendable {}

    private let shared: Locked<Shared>
    private let worker: SerialWorker<Watch>

    public init(link: BatondLink) {
        self.link = link
        let shared = Locked(Shared())
        self.shared = shared
        // The pause before the next watch: short after one that worked, longer while batond stays away.
        worker = SerialWorker(name: "baton-dash-feed", capacity: 1, state: 0.2) { pause, batch in
            let (reason, wasOnline) = Self.watchUntilItEnds(link, shared)
            Self.change(shared) { view in
                view.online = false
                view.offlineReason = reason
                view.settled = true
            }
            pause = wasOnline ? 0.2 : min(pause * 2, 3)
            batch.retry(batch.jobs, after: .milliseconds(Int(pause * 1_000)))
        }
    }

    /// Starts watching (once).
    public func start() {
        try? worker.submit(Watch())
    }

    /// Waits until `ready` holds for what the feed has, or `deadline` passes; returns what it has.
    func wait(until deadline: Date, ready: (View) -> Bool) -> View {
        let wake = DispatchSemaphore(value: 0)
        let key = ObjectIdentifier(wake)
        while true {
            let view = shared.withLock { shared -> View? in
                if ready(shared.view) { return shared.view }
                shared.waiters[key] = wake
                return nil
            }
            if let view { return view }
            if wake.wait(timeout: .now() + max(deadline.timeIntervalSinceNow, 0)) == .timedOut {
                return shared.withLock { shared in
                    // A change that came as the wait ended has taken the waiter out and signals: fine, the semaphore is ours.
                    shared.waiters[key] = nil
                    return shared.view
                }
            }
        }
    }

    /// Changes the view and wakes every stream waiting for it.
    private static func change(_ shared: Locked<Shared>, _ body: (inout View) -> Void) {
        let waiters = shared.withLock { shared in
            body(&shared.view)
            defer { shared.waiters = [:] }
            return shared.waiters.values
        }
        for waiter in waiters { waiter.signal() }
    }

    /// Follows one watch; returns why it ended and whether it had begun.
    private static func watchUntilItEnds(_ link: BatondLink, _ shared: Locked<Shared>) -> (String, Bool) {
        let client: Client
        do {
            client = try Client(path: link.socketPath)
            try client.send(Request(op: .watch, progress: true))
        } catch {
            return ("cannot reach batond at \(link.socketPath)", false)
        }
        var began = false
        do {
            while let line = try client.receiveLine() {
                let response = try JSONDecoder().decode(Response.self, from: Data(line))
                if response.event == "watching" {
                    began = true
                    change(shared) { view in
                        view.ring = EventRing(epoch: newEpoch())
                        view.online = true
                        view.settled = true
                    }
                } else if response.event == "update" {
                    // A transition, or (without one) progress a run reported.
                    change(shared) { view in
                        view.ring.append(name: response.transition == nil ? "progress" : "update", data: String(decoding: line, as: UTF8.self))
                    }
                } else if let error = response.error {
                    return (error.code == .shuttingDown ? "batond is stopping" : error.message, began)
                }
            }
        } catch {}
        return ("batond closed the connection", began)
    }

    static func newEpoch() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 36)
    }
}
