import BatonCore
@testable import BatonStore
import Foundation
import Testing

/// The pauses and resumes a real SQLite history keeps, as `events` lists them: newest first (or
/// oldest first), of the actions named, inside a window, up to a limit.
@Suite("Pause events in the store")
struct PauseEventsTests {
    @Test("events: order, actions, window and limit")
    func listed() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        let at = { (second: Int64) in Timestamp(rawValue: 1_800_000_000_000_000 + second * 1_000_000) }
        try await store.commit([
            .pause(ActionPause(action: "deploy", by: "alice", reason: "migrating db", at: at(1), until: at(3_600))),
            .pause(ActionPause(action: "backup", by: ActionPause.afterFailures, reason: "3 failures in a row", at: at(2))),
            .resume(action: "deploy", by: "bob", at: at(3)),
        ]).get()
        let all = try await store.events(HistoryFilter())
        #expect(all.map(\.action) == ["deploy", "backup", "deploy"] && all.map(\.event) == [.resumed, .paused, .paused])
        #expect(all.first == ActionEvent(action: "deploy", event: .resumed, by: "bob", at: at(3)))
        #expect(all.last == ActionEvent(action: "deploy", event: .paused, by: "alice", reason: "migrating db", at: at(1), until: at(3_600)))
        #expect(try await store.events(HistoryFilter(reverse: true)).map(\.at) == [at(1), at(2), at(3)])
        #expect(try await store.events(HistoryFilter(actions: ["backup"])).map(\.by) == [ActionPause.afterFailures])
        #expect(try await store.events(HistoryFilter(since: at(2), until: at(3))).map(\.action) == ["backup"])
        #expect(try await store.events(HistoryFilter(limit: 1)).map(\.event) == [.resumed])
    }

    @Test("a pause --hold is kept as one (history --events says paused (hold)); a row written without it reads as no hold")
    func hold() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(path: dir.file("h.sqlite"))
        defer { store.close() }
        let at = { (second: Int64) in Timestamp(rawValue: 1_800_000_000_000_000 + second * 1_000_000) }
        try await store.commit([
            .pause(ActionPause(action: "deploy", by: "alice", reason: "migrating db", at: at(1), hold: true)),
            .pause(ActionPause(action: "backup", by: "bob", reason: "disk swap", at: at(2))),
        ]).get()
        let connection = try Connection(path: dir.file("h.sqlite"))
        try connection.execute("INSERT INTO pause_events (action, event, by_whom, reason, at) VALUES ('old', 'paused', 'carol', 'before 16', 0)")
        let events = try await store.events(HistoryFilter(reverse: true))
        #expect(events.map(\.what) == ["paused", "paused (hold)", "paused"] && events.map(\.hold) == [nil, true, nil], "\(events)")
        #expect(events[1] == ActionEvent(action: "deploy", event: .paused, by: "alice", reason: "migrating db", at: at(1), hold: true))
    }
}
