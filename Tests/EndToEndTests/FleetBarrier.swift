import BatonCore
import BatonIPC
import Foundation
import Testing

/// A known point in a fleet, for a test that checks that something did not happen (a hook not
/// fired twice, a waiting run not started): runs of `FleetBarrier.action`, triggered after what
/// the test did (one on each host, `pass`), each seen ended on every host's `watch`. A fleet host's watchers are fed by its
/// feed alone (`watchersFedByFleet`), on its loop, and a feed's catch-up delivers everything its
/// snapshot sees, in order: once a host's watch has the barrier's end, its feed has delivered
/// every transition committed before the barrier's trigger, and its loop has handled them. The
/// run is debounced, so its host starts it on a look (`lookForStarts`) that reads that host's
/// queued runs holding their keys after the barrier was triggered: a run of that host that
/// should not start, and would on a look, has been offered to one.
///
/// What it replaces: sleeping a second or two ("the feed refreshes at least once a second"),
/// which proves nothing on a loaded machine and costs that long on a quiet one.
enum FleetBarrier {
    /// The action to add to the fleet's config.
    static let action = #"barrier: { exec: ["true"], debounce: "10ms", policy: "queue" },"#

    /// A barrier run on each host in turn, `hosts[first]`'s first (the host whose looks the test
    /// is about), each seen ended on every host's watch before the next is triggered: after the
    /// first, every host's loop has handled what was committed before it; each next one, queued
    /// on its host after that, is committed after what that host's loop asked of the database in
    /// answer (a hook it fired, a run it started).
    static func pass(_ hosts: [Daemon], first: Int = 0) throws {
        let watches = try hosts.map { host in
            let watch = try Client(path: host.socket)
            _ = try watch.send(Request(op: .watch, action: "barrier"))
            let opened = try watch.receive(timeout: .seconds(30))
            try #require(opened?.event == "watching", "\(host.socket): \(String(describing: opened))")
            return watch
        }
        for owner in [first] + hosts.indices.filter({ $0 != first }) {
            let answer = try Client(path: hosts[owner].socket).call(Request(op: .trigger, action: "barrier", detach: true))
            let run = try #require(answer.run?.id, "the barrier's trigger on web-\(owner + 1): \(answer)")
            for (index, watch) in watches.enumerated() {
                var end: Phase?
                while end == nil, let update = try watch.receive(timeout: .seconds(30)) {
                    if update.run?.id == run, let to = update.transition?.to, to.isTerminal { end = to }
                }
                try #require(end == .success, "web-\(index + 1)'s feed told the barrier run \(run)'s end: \(String(describing: end))")
            }
        }
    }
}
