@testable import BatonCore
@testable import BatonService
import Testing

/// Issue 42, item 3, at the service: a socket trigger and a webhook's press both seal a secret
/// param (the run keeps `***`, its key the sealer's hash) and hand the value to the job only.
@Suite struct SecretParamServiceTests {
    /// What each job got, as the jobs start.
    final class Seen: Sendable {
        let (values, continuation) = AsyncStream<(Int64, String?)>.makeStream()
    }

    static let action = Action(name: "deploy", policy: .join, params: ["token": ParamSpec(secret: true)], keyParams: ["token"])

    static func service(sealer: SecretSealer?, seen: Seen, gate: Gate) -> Service {
        var options = Conductor.Options()
        options.sealer = sealer
        let store = MemoryStore()
        let conductor = Conductor(actions: [], store: store, options: options)
        conductor.register(action) { context in
            seen.continuation.yield((context.runID, context.params["token"]))
            await gate.wait()
        }
        let generation = Generation(actions: conductor.configuredActions(), access: AccessPolicy(trigger: .anyone, cancel: .anyone, read: .anyone), owner: 0)
        return Service(conductor: conductor, history: FakeHistory(), journal: store, generation: generation,
                       hooks: Service.Hooks(reload: { _ in .refused("no") }, prune: { dryRun throws(BatonError) in PruneReport(dryRun: dryRun) }),
                       reactor: conductor.reactor)
    }

    static let sealer = SecretSealer { action, param, value in "sealed-\(action)-\(param)-\(value.count)-\(value.hashValue)" }

    @Test("a trigger and a press with the same secret share a run; the run shows ***; the job got the value; another value is another run")
    func sealedTriggers() async throws {
        let seen = Seen(), gate = Gate()
        let service = Self.service(sealer: Self.sealer, seen: seen, gate: gate)
        let caller = Recorder(uid: 0)
        let first = try #require(await ask(service, #"{"op":"trigger","action":"deploy","params":{"token":"t0ps3cret"},"detach":true}"#, caller))
        let run = try #require(first.run)
        #expect(run.params == ["token": "***"] && run.key.hasPrefix("deploy token=sealed-deploy-token-9-") && !run.key.contains("t0ps3cret"))
        let pressed = await withCheckedContinuation { done in
            service.press("deploy", params: ["token": "t0ps3cret"], via: "webhook test", delivery: nil, follower: nil) { done.resume(returning: $0) }
        }
        let (decision, joined) = try pressed.get()
        #expect(decision == .joined && joined.id == run.id && joined.params == ["token": "***"])
        let other = try #require(await ask(service, #"{"op":"trigger","action":"deploy","params":{"token":"another1"},"detach":true}"#, caller))
        #expect(other.decision == .created && other.run?.id != run.id)
        var got: [Int64: String] = [:]
        for await (id, value) in seen.values {
            got[id] = value
            if got.count == 2 { break }
        }
        #expect(got == [run.id: "t0ps3cret", try #require(other.run?.id): "another1"])
        gate.open()
    }

    @Test("without a sealer, a trigger of an action with a secret param is refused (internal), and nothing runs")
    func noSealer() async throws {
        let seen = Seen(), gate = Gate()
        let service = Self.service(sealer: nil, seen: seen, gate: gate)
        let answer = try #require(await ask(service, #"{"op":"trigger","action":"deploy","params":{"token":"xxxx"},"detach":true}"#, Recorder(uid: 0)))
        #expect(answer.error?.code == .internal && answer.error?.message.contains("secret") == true)
        gate.open()
    }

    func ask(_ service: Service, _ json: String, _ caller: Recorder) async -> Response? {
        service.receivedOnLoop(.line(Array(json.utf8)), from: caller)
        return await caller.answer()
    }
}
