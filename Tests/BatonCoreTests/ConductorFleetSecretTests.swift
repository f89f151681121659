@testable import BatonCore
@testable import BatonEngine
import Testing

/// A fleet host runs a run its coordinator started (`adopt`) with the secret params' values this
/// host kept for it; without them (the trigger came to another host, which stopped) the run ends
/// `failure`, reason `secret`, and nothing is launched with `***` in place of the value.
@Suite("Conductor: secret params of a run the fleet started")
struct ConductorFleetSecretTests {
    static let now = Timestamp(rawValue: 1_000_000)
    static let action: Action = {
        var action = Action(name: "deploy", exec: ["x"])
        action.params = ["token": ParamSpec(secret: true)]
        return action
    }()

    static func adopted(secrets: [String: String]) -> AdoptedRun {
        let run = RunSnapshot(id: 5, action: "deploy", key: "deploy token=hmac:00", phase: .loading, policy: .reject,
                              params: ["token": Action.maskedValue], trigger: nil, queuedAt: now)
        return AdoptedRun(run: run, seq: 2, action: action, secrets: secrets)
    }

    @Test("with the values: the attempt is launched with them")
    func withValues() {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        let effects = state.handle(.adopt(1, Self.adopted(secrets: ["token": "s3cr3t"])), at: Self.now)
        var launches: [Launch] = []
        for case let .launch(launch) in effects { launches.append(launch) }
        #expect(launches.map(\.secrets) == [["token": "s3cr3t"]])
    }

    @Test("without them: nothing launched; the run ends failure, reason secret, naming the param")
    func withoutValues() {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        let effects = state.handle(.adopt(1, Self.adopted(secrets: [:])), at: Self.now)
        #expect(!effects.contains { if case .launch = $0 { true } else { false } })
        var ends: [Transition] = []
        for case let .write(entries, _) in effects { for case let .transition(transition) in entries { ends.append(transition) } }
        #expect(ends.count == 1 && ends.first?.to == .failure && ends.first?.seq == 3 && ends.first?.detail.reason == "secret", "\(ends)")
        #expect(ends.first?.detail.error?.contains("secret param token") == true)
        #expect(state.inFlight.isEmpty)
    }

    @Test("without them, of an action with pauseAfterFailures: the end counts, as any failure's does (the fleet's store counts it in the end's item)")
    func withoutValuesCounted() {
        var state = ConductorState(maxConcurrentRuns: 2, seed: 1)
        state.storeCountsFailures = true
        var adopted = Self.adopted(secrets: [:])
        adopted.action.pauseAfterFailures = 2
        let effects = state.handle(.adopt(1, adopted), at: Self.now)
        var counted: [Int64] = []
        for case let .write(entries, _) in effects {
            for case let .failureStreak(run, action, most) in entries where action == "deploy" && most == 2 { counted.append(run) }
        }
        #expect(counted == [5], "\(effects)")
    }
}
