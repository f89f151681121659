@testable import BatonFleet
import Testing

/// The keeps of artifacts that wait for PostgreSQL (`KeepRetries`, owned by the loop): each waits
/// for its timer, then is tried again; a stop gives every waiting keep up at once (saying batond
/// stops), and a keep that fails after the stop gives up at once. No PostgreSQL, no loop.
@Suite("FleetArtifact retries: the keeps waiting for PostgreSQL, as a value")
struct FleetArtifactRetryTests {
    typealias Retries = KeepRetries<String>

    struct Row: Sendable, CustomTestStringConvertible {
        var what: String
        var events: [Retries.Event]
        /// The effects of the last event.
        var effects: [Retries.Effect]
        var waiting: Int
        var testDescription: String { what }
    }

    static let table: [Row] = [
        Row(what: "a keep that failed waits for its timer", events: [.wait("run 1", after: .seconds(1))],
            effects: [.arm(1, "run 1", after: .seconds(1))], waiting: 1),
        Row(what: "its timer tries it again", events: [.wait("run 1", after: .seconds(1)), .fired(1)], effects: [.retry("run 1")],
            waiting: 0),
        Row(what: "a timer fires once", events: [.wait("run 1", after: .seconds(1)), .fired(1), .fired(1)], effects: [], waiting: 0),
        Row(what: "each keep has its own timer",
            events: [.wait("run 1", after: .seconds(1)), .wait("run 2", after: .seconds(2)), .fired(2)], effects: [.retry("run 2")],
            waiting: 1),
        Row(what: "a stop gives every waiting keep up at once, in order, saying batond stops",
            events: [.wait("run 1", after: .seconds(1)), .wait("run 2", after: .seconds(2)), .stop],
            effects: [.giveUp("run 1", stopping: true), .giveUp("run 2", stopping: true)], waiting: 0),
        Row(what: "a timer that fires after the stop does nothing (its keep was given up)",
            events: [.wait("run 1", after: .seconds(1)), .stop, .fired(1)], effects: [], waiting: 0),
        Row(what: "a keep that fails after the stop gives up at once, with its own error",
            events: [.stop, .wait("run 3", after: .seconds(1))], effects: [.giveUp("run 3", stopping: false)], waiting: 0),
    ]

    @Test("one event after the other", arguments: table)
    func row(_ row: Row) {
        var retries = Retries()
        var effects: [Retries.Effect] = []
        for event in row.events { effects = retries.handle(event) }
        #expect(effects == row.effects)
        #expect(retries.waiting.count == row.waiting)
    }
}
