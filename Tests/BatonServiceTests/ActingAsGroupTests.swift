import BatonCore
@testable import BatonService
import Testing

/// Issue 42, item 5: a person with no account, whom the team's dashboard maps to a local group,
/// is asked for with `as` (their name) and `asGroup` (the group). batond serves them with exactly
/// the group's rights (and everyone's), none of any user's, and names them in what it records.
@Suite("Service: requests made as a member of a group (asGroup)")
struct ActingAsGroupTests {
    static func trigger(_ id: Int, _ action: String, group: String, name: String = "carol@example.org") -> String {
        #"{"id":\#(id),"op":"trigger","action":"\#(action)","params":{"env":"staging"},"detach":true,"as":"\#(name)","asGroup":"\#(group)"}"#
    }

    @Test("a member of ops may trigger deploy (ops' rule); the run is recorded as carol via group:ops, with no account's uid")
    func groupsRights() async throws {
        let fixture = Fixture()
        let answer = try #require(await fixture.ask(Self.trigger(1, "deploy", group: "ops"), as: Recorder(uid: 0)))
        #expect(answer.ok == true, "\(String(describing: answer.error))")
        #expect(answer.run?.trigger?.uid == Peer.groupPrincipalUID)
        #expect(answer.run?.via == "carol@example.org via group:ops")
    }

    @Test("a member of staff may not trigger deploy (alice's and ops' only): refused naming the person and group; reads what everyone may")
    func otherGroupRefused() async throws {
        let fixture = Fixture()
        let root = Recorder(uid: 0)
        let answer = try #require(await fixture.ask(Self.trigger(1, "deploy", group: "staff"), as: root))
        #expect(answer.error?.code == .forbidden)
        #expect(answer.error?.message == "carol@example.org via group:staff may not trigger deploy", "\(String(describing: answer.error))")
        // The refusal is recorded (`baton history --denied`) naming her too.
        let denied = fixture.store.entries.compactMap { entry -> TriggerRecord? in
            if case let .trigger(record) = entry { return record }
            return nil
        }
        #expect(denied.map(\.via) == ["carol@example.org via group:staff"] && denied.first?.peer?.uid == Peer.groupPrincipalUID, "\(denied)")
        let status = try #require(await fixture.ask(#"{"id":2,"op":"status","as":"carol@example.org","asGroup":"staff"}"#, as: root))
        #expect(status.actions?.map(\.name).sorted() == ["deploy", "hold"])
        #expect(status.actions?.first { $0.name == "deploy" }?.allowed == [.read])
        // hold: its rules are the global ones, which admit everyone: a group principal too.
        #expect(status.actions?.first { $0.name == "hold" }?.allowed?.contains(.trigger) == true)
    }

    @Test("a member of ops cancels a run: the cancel is asked with their name, kept as the transition's via")
    func cancelNamed() async throws {
        let fixture = Fixture()
        let first = Recorder(uid: 0)
        defer { fixture.gate.open() }
        fixture.service.receivedOnLoop(.line(Array(#"{"op":"trigger","action":"hold"}"#.utf8)), from: first)
        let run = try #require(await first.next()?.run?.id)
        let cancel = try #require(await fixture.ask(#"{"id":2,"op":"cancel","run":\#(run),"as":"carol@example.org","asGroup":"ops"}"#, as: Recorder(uid: 0)))
        #expect(cancel.ok == true, "\(String(describing: cancel.error))")
        let end = try #require(await first.answer())
        #expect(end.run?.phase == .cancelled && end.run?.cancelledBy == Peer.groupPrincipalUID)
        let ends = fixture.store.transitions.filter { $0.runID == run && $0.to == .cancelled }
        #expect(ends.map(\.detail.via) == ["carol@example.org via group:ops"], "\(fixture.store.transitions)")
    }

    @Test("review item 5: a member of ops pauses deploy: the pause names the person via their group, not the uid they share")
    func pauseNamed() async throws {
        let fixture = Fixture()
        let answer = try #require(await fixture.ask(#"{"id":1,"op":"pause","action":"deploy","reason":"r","as":"carol@example.org","asGroup":"ops"}"#,
                                                    as: Recorder(uid: 0)))
        #expect(answer.ok == true, "\(String(describing: answer.error))")
        #expect(answer.pause?.by == "carol@example.org via group:ops")
    }

    @Test("only root and batond's own user may claim a group; an unknown group gets nothing; malformed fields are bad requests")
    func refusals() async throws {
        let fixture = Fixture()
        let alice = try #require(await fixture.ask(Self.trigger(1, "deploy", group: "ops"), as: Recorder(uid: Fixture.alice)))
        #expect(alice.error?.code == .forbidden && alice.error?.message.contains("only root and batond's own user") == true)
        #expect(fixture.conductor.inFlight().isEmpty)
        let root = Recorder(uid: 0)
        let unknown = try #require(await fixture.ask(Self.trigger(2, "deploy", group: "nope"), as: root))
        #expect(unknown.error?.code == .forbidden && unknown.error?.message.contains("no group nope on this machine") == true)
        for bad in [#"{"id":3,"op":"status","asGroup":"ops"}"#,
                    #"{"id":4,"op":"status","as":"carol example","asGroup":"ops"}"#,
                    #"{"id":5,"op":"status","as":"carol@example.org","asGroup":"o:ps"}"#,
                    #"{"id":6,"op":"status","as":"\#(String(repeating: "c", count: 129))","asGroup":"ops"}"#] {
            let answer = try #require(await fixture.ask(bad, as: root))
            #expect(answer.error?.code == .badRequest, "\(bad)")
        }
    }
}
