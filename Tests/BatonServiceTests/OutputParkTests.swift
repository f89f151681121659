import BatonCore
@testable import BatonService
import Testing

/// A followed output request is parked on its connection (`Caller.park`) while it follows, so a
/// restart in place can end it; however it ends, it is unparked (the connection's count goes
/// back): else a restart waits its whole bound, or seals a connection under a taken trigger.
@Suite("Service: output follows parked and unparked")
struct OutputParkTests {
    /// The journal's history, but every output page read fails.
    final class FailingOutput: HistoryReader {
        let base: JournalHistory
        init(_ base: JournalHistory) { self.base = base }
        func run(_ id: Int64) async throws(BatonError) -> RunDetail? { try await base.run(id) }
        func output(of run: Int64, from offset: Int64, maxBytes: Int) async throws(BatonError) -> OutputPage? {
            throw .storeUnavailable("disk gone")
        }
        func runs(_ filter: HistoryFilter) async throws(BatonError) -> [RunSnapshot] { try await base.runs(filter) }
        func stats(actions: [String], since: Timestamp?) async throws(BatonError) -> [ActionStats] { [] }
        func denied(limit: Int) async throws(BatonError) -> [TriggerRecord] { [] }
        func lastEnded() async throws(BatonError) -> [RunSnapshot] { [] }
        func recentDurations(of actions: [String]) async throws(BatonError) -> [String: [Int64]] { [:] }
    }

    let runner = ScriptedRunner()
    let store = MemoryStore()
    let conductor: Conductor

    init() {
        conductor = Conductor(actions: [Action(name: "talk", exec: ["talk"])], store: store, options: Conductor.Options(execRunner: runner))
    }

    func service(failing: Bool) -> Service {
        let history: any HistoryReader = failing ? FailingOutput(JournalHistory(store)) : JournalHistory(store)
        return Service(conductor: conductor, history: history, journal: store,
                       generation: Generation(actions: conductor.configuredActions(), access: AccessPolicy(trigger: .anyone, cancel: .anyone, read: .anyone), owner: 0),
                       hooks: Service.Hooks(reload: { _ in .applied(warnings: []) }, prune: { dryRun throws(BatonError) in PruneReport(dryRun: dryRun) }),
                       reactor: conductor.reactor,
                       accounts: { $0 == "alice" ? ActingUser(name: "alice", uid: 1_000, gid: 1_000, groups: [1_000]) : nil })
    }

    func ask(_ service: Service, _ json: String, _ caller: Recorder) { service.receivedOnLoop(.line(Array(json.utf8)), from: caller) }

    func started(_ service: Service) async {
        let trigger = Recorder(uid: 0)
        ask(service, #"{"op":"trigger","action":"talk","detach":true}"#, trigger)
        _ = await trigger.answer()
        await runner.write("x")
    }

    @Test("a follow whose history read fails: the error is its answer, and it is no longer parked")
    func failedReadUnparks() async throws {
        let service = service(failing: true)
        await started(service)
        let follower = Recorder(uid: 0)
        ask(service, #"{"id":1,"op":"output","run":1,"follow":true}"#, follower)
        let answer = await follower.answer()
        #expect(answer?.ok == false && answer?.error?.code == .storeUnavailable, "\(String(describing: answer))")
        #expect(follower.parked == 0, "the failed follow left its connection's parked count at \(follower.parked)")
        await runner.end()
    }

    @Test("a follow served as another user (the dashboard's) parks its connection, and unparks it at the run's end")
    func actingParks() async throws {
        let service = service(failing: false)
        await started(service)
        let dashboard = Recorder(uid: 0)
        ask(service, #"{"id":1,"op":"output","run":1,"follow":true,"as":"alice"}"#, dashboard)
        var text = ""
        while text != "x", let line = await dashboard.next() {
            if let chunk = line.chunk { text += String(decoding: chunk.bytes, as: UTF8.self) }
            if line.event == nil { break }
        }
        #expect(text == "x")
        #expect(dashboard.parked == 1, "a follow served as alice parks the dashboard's connection")
        await runner.end()
        let answer = await dashboard.answer()
        #expect(answer?.ok == true, "\(String(describing: answer))")
        #expect(dashboard.parked == 0)
    }
}
