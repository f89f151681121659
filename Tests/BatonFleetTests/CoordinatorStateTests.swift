import BatonCore
@testable import BatonFleet
import Testing

/// The coordinator's own decisions as a value (`CoordinatorState`): start slots granted to the
/// transactions that may start runs, given back when they settle or their runs are counted; one
/// look for startable runs at a time; one debounce timer per run; nothing starts after shutdown.
/// No PostgreSQL, no loop: events in, effects out.
@Suite("CoordinatorState: the fleet coordinator's slots, looks and timers, as a value")
struct CoordinatorStateTests {
    static func claimed(_ id: Int64) -> FleetCoordinator.Claimed {
        let run = RunSnapshot(id: id, action: "deploy", key: "deploy", phase: .loading, policy: .reject, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: 1))
        return FleetCoordinator.Claimed(run: run, seq: 2, action: Action(name: "deploy", exec: ["true"]))
    }

    struct Row: Sendable, CustomTestStringConvertible {
        var what: String
        var limit = 2
        var events: [CoordinatorState.Event]
        /// The effects of the last event.
        var effects: [CoordinatorState.Effect]
        /// The slots held after it.
        var reserved: Int
        var testDescription: String { what }
    }

    static func claimed(_ id: Int64, secrets: [String: String]) -> FleetCoordinator.Claimed {
        var run = claimed(id)
        run.secrets = secrets
        return run
    }

    static let table: [Row] = [
        Row(what: "a run kept with its secrets' values takes them when it is handed",
            events: [.keep(7, secrets: ["token": "s3cr3t"]), .reserve(wanted: 1, running: 0), .settled(granted: 1, claimed: [claimed(7)])],
            effects: [.hand(claimed(7, secrets: ["token": "s3cr3t"]))], reserved: 1),
        Row(what: "once: a second hand of the run (another start's claim) has none left",
            events: [.keep(7, secrets: ["token": "s3cr3t"]), .reserve(wanted: 2, running: 0), .settled(granted: 1, claimed: [claimed(7)]),
                     .settled(granted: 1, claimed: [claimed(7)])],
            effects: [.hand(claimed(7))], reserved: 2),
        Row(what: "a kept run's loading seen by the feed before its claim settles keeps its secrets for the hand",
            events: [.keep(7, secrets: ["token": "s3cr3t"]), .delivered(claimed(7).run, ended: false), .reserve(wanted: 1, running: 0),
                     .settled(granted: 1, claimed: [claimed(7)])],
            effects: [.hand(claimed(7, secrets: ["token": "s3cr3t"]))], reserved: 1),
        Row(what: "a kept run that ends before it starts (cancelled) drops its secrets",
            events: [.keep(7, secrets: ["token": "s3cr3t"]), .delivered(claimed(7).run, ended: true), .reserve(wanted: 1, running: 0),
                     .settled(granted: 1, claimed: [claimed(7)])],
            effects: [.hand(claimed(7))], reserved: 1),
        Row(what: "a trigger is granted a free slot", events: [.reserve(wanted: 1, running: 0)], effects: [.granted(1)], reserved: 1),
        Row(what: "no slot while the conductor runs the limit", events: [.reserve(wanted: 1, running: 2)], effects: [.granted(0)],
            reserved: 0),
        Row(what: "slots granted to transactions in flight count against the limit",
            events: [.reserve(wanted: 1, running: 0), .reserve(wanted: 1, running: 0), .reserve(wanted: 1, running: 0)],
            effects: [.granted(0)], reserved: 2),
        Row(what: "an end's starts get what is free, not what they freed",
            events: [.reserve(wanted: 1, running: 0), .reserve(wanted: 3, running: 0)], effects: [.granted(1)], reserved: 2),
        Row(what: "a batch that started nothing gives its slot back",
            events: [.reserve(wanted: 1, running: 0), .settled(granted: 1, claimed: [])], effects: [], reserved: 0),
        Row(what: "a claimed run is handed and keeps its slot until counted",
            events: [.reserve(wanted: 2, running: 0), .settled(granted: 2, claimed: [claimed(7)])], effects: [.hand(claimed(7))],
            reserved: 1),
        Row(what: "a counted run gives its slot back",
            events: [.reserve(wanted: 1, running: 0), .settled(granted: 1, claimed: [claimed(7)]), .counted], effects: [],
            reserved: 0),
        Row(what: "a look reads what may start holding no slot", events: [.reserve(wanted: 1, running: 0), .look(running: 0)],
            effects: [.findReady], reserved: 1),
        Row(what: "then takes a slot for each ready run, while free",
            events: [.look(running: 0), .found(ready: [3, 4, 5], held: [9], running: 0)],
            effects: [.start(ready: [3, 4, 5], held: [9], slots: 2)], reserved: 2),
        Row(what: "a trigger while the look reads still gets its slot",
            events: [.look(running: 0), .reserve(wanted: 1, running: 0)], effects: [.granted(1)], reserved: 1),
        Row(what: "a look that finds nothing takes nothing and ends",
            events: [.look(running: 0), .found(ready: [], held: [], running: 0), .look(running: 0)], effects: [.findReady], reserved: 0),
        Row(what: "a look that finds runs but no free slot ends",
            events: [.look(running: 1), .found(ready: [3], held: [], running: 2)], effects: [], reserved: 0),
        Row(what: "no look without a free slot", events: [.look(running: 2)], effects: [], reserved: 0),
        Row(what: "a slot freed while a moved run waits to resume is kept for it: no other start takes it (review-fleetrecovery10, M1)",
            events: [.reserveToResume(wanted: 1, running: 2, waiting: 1), .reserve(wanted: 1, running: 1)], effects: [.granted(0)], reserved: 0),
        Row(what: "nor does a look for queued runs start while the kept slot is the only one free",
            events: [.reserveToResume(wanted: 1, running: 2, waiting: 1), .look(running: 1)], effects: [], reserved: 0),
        Row(what: "the next sweep takes the kept slot for the moved run",
            events: [.reserveToResume(wanted: 1, running: 2, waiting: 1), .reserveToResume(wanted: 1, running: 1, waiting: 1)],
            effects: [.granted(1)], reserved: 1),
        Row(what: "only as many slots as runs wait are kept: the rest go to other starts",
            events: [.reserveToResume(wanted: 1, running: 2, waiting: 1), .reserve(wanted: 2, running: 0)], effects: [.granted(1)], reserved: 1),
        Row(what: "a sweep that finds no run waiting keeps no slot",
            events: [.reserveToResume(wanted: 1, running: 2, waiting: 1), .reserveToResume(wanted: 0, running: 1, waiting: 0),
                     .reserve(wanted: 1, running: 1)], effects: [.granted(1)], reserved: 1),
        Row(what: "a look refused for want of a slot runs when a transaction gives its slot back (a trigger that joined)", limit: 1,
            events: [.reserve(wanted: 1, running: 0), .look(running: 0), .settled(granted: 1, claimed: [])], effects: [.findReady],
            reserved: 0),
        Row(what: "ready runs found with no slot free: a look again when a transaction gives one back", limit: 1,
            events: [.look(running: 0), .reserve(wanted: 1, running: 0), .found(ready: [3], held: [], running: 0),
                     .settled(granted: 1, claimed: [])],
            effects: [.findReady], reserved: 0),
        Row(what: "a slot given back after a look with nothing ready starts no look", limit: 1,
            events: [.look(running: 0), .reserve(wanted: 1, running: 0), .found(ready: [], held: [], running: 0),
                     .settled(granted: 1, claimed: [])],
            effects: [], reserved: 0),
        Row(what: "a look asked while one is in flight waits for it",
            events: [.look(running: 0), .look(running: 0)], effects: [], reserved: 0),
        Row(what: "and runs when it settles",
            events: [.look(running: 0), .look(running: 0), .found(ready: [3], held: [], running: 0),
                     .looked(granted: 1, claimed: [claimed(3)], running: 0)],
            effects: [.hand(claimed(3)), .findReady], reserved: 1),
        Row(what: "or when it found nothing",
            events: [.look(running: 0), .look(running: 0), .found(ready: [], held: [], running: 0)], effects: [.findReady],
            reserved: 0),
        Row(what: "a look that settles alone starts no other",
            events: [.look(running: 0), .found(ready: [3], held: [], running: 0), .looked(granted: 1, claimed: [], running: 0)],
            effects: [], reserved: 0),
        Row(what: "a debounced run gets one timer, a little after its window",
            events: [.debounce(5, after: .milliseconds(20))], effects: [.armTimer(5, after: .milliseconds(21))], reserved: 0),
        Row(what: "a run armed already keeps its timer",
            events: [.debounce(5, after: .milliseconds(20)), .debounce(5, after: .milliseconds(40))], effects: [], reserved: 0),
        Row(what: "a fired timer looks for starts",
            events: [.debounce(5, after: .milliseconds(20)), .debounceFired(5, running: 1)], effects: [.findReady], reserved: 0),
        Row(what: "after a fired timer the run may be armed again",
            events: [.debounce(5, after: .zero), .debounceFired(5, running: 2), .debounce(5, after: .zero)],
            effects: [.armTimer(5, after: .milliseconds(1))], reserved: 0),
        Row(what: "after shutdown no slot is granted", events: [.stopStarting, .reserve(wanted: 1, running: 0)],
            effects: [.granted(0)], reserved: 0),
        Row(what: "after shutdown no look", events: [.stopStarting, .look(running: 0)], effects: [], reserved: 0),
        Row(what: "after shutdown no timer", events: [.stopStarting, .debounce(5, after: .zero)], effects: [], reserved: 0),
        Row(what: "a look in flight at shutdown still hands what it claimed (committed: loading)",
            events: [.look(running: 0), .found(ready: [9], held: [], running: 0), .stopStarting,
                     .looked(granted: 1, claimed: [claimed(9)], running: 0)],
            effects: [.hand(claimed(9))], reserved: 1),
        Row(what: "after shutdown a found run gets no slot",
            events: [.look(running: 0), .stopStarting, .found(ready: [9], held: [], running: 0)], effects: [], reserved: 0),
        Row(what: "a run's needs are asked", events: [.askNeeds(asking, definition: needing)], effects: [.askNeeds(asking, definition: needing)], reserved: 0),
        Row(what: "a run with no definition here (its action gone, or refused) is asked too: its needs are written met",
            events: [.askNeeds(asking, definition: nil)], effects: [.askNeeds(asking, definition: nil)], reserved: 0),
        Row(what: "a run's needs are asked once at a time", events: [.askNeeds(asking, definition: needing), .askNeeds(asking, definition: needing)], effects: [], reserved: 0),
        Row(what: "written: a tick that read the rows before the write does not ask again",
            events: [.askNeeds(asking, definition: needing), .needsWritten(7, at: t0 + .milliseconds(5)), .needsRead(readAt: t0), .askNeeds(asking, definition: needing)],
            effects: [], reserved: 0),
        Row(what: "written: a tick that read the rows after the write may ask again (the run is asking once more)",
            events: [.askNeeds(asking, definition: needing), .needsWritten(7, at: t0 + .milliseconds(5)), .needsRead(readAt: t0 + .milliseconds(10)),
                     .askNeeds(asking, definition: needing)],
            effects: [.askNeeds(asking, definition: needing)], reserved: 0),
        Row(what: "a run still being asked is not forgotten by a tick's read",
            events: [.askNeeds(asking, definition: needing), .needsRead(readAt: t0 + .seconds(1)), .askNeeds(asking, definition: needing)], effects: [], reserved: 0),
        Row(what: "needs that could not be asked now (nothing written) are asked again at once",
            events: [.askNeeds(asking, definition: needing), .needsNotAsked(7), .askNeeds(asking, definition: needing)], effects: [.askNeeds(asking, definition: needing)], reserved: 0),
    ]

    /// A queued run whose needs are asked, and a clock's reading the table's instants follow.
    static let asking = claimed(7).run
    /// The definition `asking` was triggered with: its needs are the ones asked, whatever the config says now.
    static let needing: Action = {
        var action = Action(name: "c", exec: ["true"])
        action.needs = [NeedTarget(action: Action(name: "build", exec: ["true"]), params: [:])]
        return action
    }()
    static let t0 = ContinuousClock.now

    @Test("one event after the other", arguments: table)
    func row(_ row: Row) {
        var state = CoordinatorState(limit: row.limit)
        var effects: [CoordinatorState.Effect] = []
        for event in row.events { effects = state.handle(event) }
        #expect(effects == row.effects)
        #expect(state.reserved == row.reserved)
    }

    @Test("a handed run is adopted until the feed delivers its end; the fleet's runs follow the feed")
    func adoptedAndInFlight() {
        var state = CoordinatorState(limit: 1)
        _ = state.handle(.reserve(wanted: 1, running: 0))
        _ = state.handle(.settled(granted: 1, claimed: [Self.claimed(7)]))
        #expect(state.adopted == [7: 2])
        var other = Self.claimed(8).run
        other.phase = .queued
        _ = state.handle(.refreshed([Self.claimed(7).run, other]))
        #expect(Set(state.fleetInFlight.keys) == [7, 8])
        _ = state.handle(.delivered(Self.claimed(7).run, ended: false))
        #expect(state.adopted == [7: 2])
        _ = state.handle(.delivered(Self.claimed(7).run, ended: true))
        #expect(state.adopted.isEmpty)
        #expect(Set(state.fleetInFlight.keys) == [8])
    }

    @Test("the slots never exceed the limit, whatever the order of grants and settlements")
    func neverOverLimit() {
        var state = CoordinatorState(limit: 3)
        var held: [Int] = []
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            if Bool.random(using: &generator), !held.isEmpty {
                let granted = held.removeLast()
                _ = state.handle(.settled(granted: granted, claimed: []))
            } else {
                for case let .granted(count) in state.handle(.reserve(wanted: Int.random(in: 1...3), running: 0)) { held.append(count) }
            }
            #expect(state.reserved == held.reduce(0, +))
            #expect(state.reserved <= 3)
        }
    }

    /// A run of another host in the loop's table, as the feed left it at `seq`.
    static func known(_ seq: Int) -> RunSnapshot {
        var run = RunSnapshot(id: 9, action: "deploy", key: "deploy", phase: .loading, policy: .join, params: [:], trigger: nil,
                              queuedAt: Timestamp(rawValue: 1))
        run.seq = seq
        return run
    }

    @Test("a wait follows the table's copy only while the feed keeps up: within 2 s of its last catch-up")
    func followableWhileFed() throws {
        let start = ContinuousClock.now
        var state = CoordinatorState(limit: 1)
        _ = state.handle(.refreshed([Self.known(3)]))
        #expect(state.followable(9, at: start) == nil, "no catch-up yet")
        _ = state.handle(.caughtUp(at: start))
        let fed = try #require(state.followable(9, at: start + .seconds(1)))
        #expect(fed.0 == Self.known(3) && fed.seq == 3)
        #expect(state.followable(9, at: start + .seconds(2)) != nil)
        // A feed whose catch-up keeps failing: the table is frozen, and may list runs that ended.
        #expect(state.followable(9, at: start + .milliseconds(2_001)) == nil)
        #expect(state.followable(8, at: start) == nil, "a run the table does not list is read")
        // An older stamp posted late does not move it back.
        _ = state.handle(.caughtUp(at: start + .seconds(5)))
        _ = state.handle(.caughtUp(at: start + .seconds(4)))
        #expect(state.followable(9, at: start + .seconds(7)) != nil)
    }

    @Test("after a read at seq 4, a follower reads back only when the table is ahead of the read, or unknown, or stale",
          arguments: [
              (table: 5, fresh: true, readsBack: true), // a refresh (or delivery) after the read: the feed may have told 5 already
              (table: 4, fresh: true, readsBack: false), // the table at the read: 5 on is still to be delivered
              (table: 3, fresh: true, readsBack: false), // the table behind the read: 4 and on are still to be delivered
              (table: 3, fresh: false, readsBack: true), // the feed stuck: whatever it will deliver comes late
              (table: 0, fresh: true, readsBack: true), // not in the table (0: not listed)
          ])
    func readsBack(table: Int, fresh: Bool, readsBack: Bool) {
        let start = ContinuousClock.now
        var state = CoordinatorState(limit: 1)
        _ = state.handle(.refreshed(table == 0 ? [] : [Self.known(table)]))
        _ = state.handle(.caughtUp(at: start))
        #expect(state.readsBack(9, after: 4, at: start + (fresh ? .seconds(1) : .seconds(3))) == readsBack)
    }
}
