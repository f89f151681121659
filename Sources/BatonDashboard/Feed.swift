import BatonCore
import BatonIPC
import Foundation

/// The dashboard's one `watch` on batond, kept open for as long as the dashboard runs: each update
/// goes into the ring that every page's event stream reads. When batond goes away the feed says
/// so (the pages show it) and connects again, with a new epoch.
public final class Feed: @unchecked Sendable {
    let link: BatondLink
    let condition = NSCondition()
    /// Guarded by `condition`.
    private(set) var ring = EventRing(epoch: Feed.newEpoch())
    private(set) var online = false
    private(set) var offlineReason = "connecting to batond"
    /// Whether the first watch has begun or failed: until then a page waits rather than hear "offline".
    private(set) var settled = false

    public init(link: BatondLink) { self.link = link }

    public func start() {
        let thread = Thread { [self] in run() }
        thread.name = "baton-dashboard-feed"
        thread.start()
    }

    /// What a stream reads under the lock: whether batond is there, why not, and the ring.
    struct View {
        var settled: Bool
        var online: Bool
        var offlineReason: String
        var ring: EventRing
    }

    /// Waits until `ready` holds for what the feed has, or `deadline` passes; returns what it has.
    func wait(until deadline: Date, ready: (View) -> Bool) -> View {
        condition.lock()
        defer { condition.unlock() }
        while !ready(view), condition.wait(until: deadline) {}
        return view
    }

    private var view: View { View(settled: settled, online: online, offlineReason: offlineReason, ring: ring) }

    private func run() {
        var pause = 0.2
        while true {
            let reason = watchUntilItEnds()
            condition.lock()
            let wasOnline = online
            online = false
            offlineReason = reason
            settled = true
            condition.broadcast()
            condition.unlock()
            // Try again soon after a watch that worked; back off while batond stays away.
            pause = wasOnline ? 0.2 : min(pause * 2, 3)
            Thread.sleep(forTimeInterval: pause)
        }
    }

    /// Follows one watch; returns why it ended.
    private func watchUntilItEnds() -> String {
        let client: Client
        do {
            client = try Client(path: link.socketPath)
            try client.send(Request(op: .watch, progress: true))
        } catch {
            return "cannot reach batond at \(link.socketPath)"
        }
        do {
            while let line = try client.receiveLine() {
                let response = try JSONDecoder().decode(Response.self, from: Data(line))
                if response.event == "watching" {
                    condition.lock()
                    ring = EventRing(epoch: Self.newEpoch())
                    online = true
                    settled = true
                    condition.broadcast()
                    condition.unlock()
                } else if response.event == "update" {
                    condition.lock()
                    // A transition, or (without one) progress a run reported.
                    ring.append(name: response.transition == nil ? "progress" : "update", data: String(decoding: line, as: UTF8.self))
                    condition.broadcast()
                    condition.unlock()
                } else if let error = response.error {
                    return error.code == .shuttingDown ? "batond is stopping" : error.message
                }
            }
        } catch {}
        return "batond closed the connection"
    }

    static func newEpoch() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 36)
    }
}
