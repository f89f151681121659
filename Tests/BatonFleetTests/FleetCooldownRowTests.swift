import BatonCore
@testable import BatonFleet
import Testing

/// How a trigger reads the key's last success from its row (`FleetCooldown.lastSuccess`), then
/// is decided by the engine (`KeyDecision`) on the database's clock, as one machine decides it.
@Suite("FleetCooldown: a trigger against the key's last success")
struct FleetCooldownRowTests {
    static func trigger(cooldown: Duration? = .seconds(10), allowsForce: Bool = false, force: Bool = false) -> Trigger {
        var action = Action(name: "deploy", exec: ["true"])
        action.cooldown = cooldown
        action.allowsForce = allowsForce
        return Trigger(action: action, key: "deploy", policy: .reject, params: [:], peer: nil, force: force)
    }

    /// The success the engine answers a trigger with, on the view the row gives (a key held by nobody).
    static func cooling(_ row: [String?]?, now: Int64 = 2_000_000, _ trigger: Trigger) -> Int64? {
        guard let success = FleetCooldown.lastSuccess(row) else { return nil }
        var slot = KeySlot()
        let view = KeyDecision.View(slot: slot, now: Timestamp(rawValue: now), lastSuccess: success)
        guard case let .shared(.cooled(run)) = KeyDecision.decide(KeyDecision.Asked(trigger), view, slot: &slot, candidate: { 99 }) else {
            return nil
        }
        return run
    }

    /// A row of `lastSuccess` (run 7 succeeded at 1,000,000 µs) and the database's clock `now`
    /// the transaction read.
    static func row(now: Int64) -> ([String?], Int64) { (["7", "1000000"], now) }

    @Test("inside the window the success answers; at its end, after it, forced where allowed, or without a success, nothing does",
          arguments: [
              (row(now: 1_000_000), trigger(), Int64?.some(7)),
              (row(now: 10_999_999), trigger(), 7),
              (row(now: 11_000_000), trigger(), nil),        // half open: exactly the cooldown after runs
              (row(now: 500_000), trigger(), nil),            // a success in the future (the clock stepped back) never cools
              (row(now: 2_000_000), trigger(allowsForce: true, force: true), nil),
              (row(now: 2_000_000), trigger(allowsForce: false, force: true), 7),
              (row(now: 2_000_000), trigger(cooldown: nil), nil),
          ] as [(([String?], Int64), Trigger, Int64?)])
    func cooling(row: ([String?], Int64), trigger: Trigger, expected: Int64?) {
        #expect(Self.cooling(row.0, now: row.1, trigger) == expected)
    }

    @Test("no row (the key never succeeded, or its success was pruned) or a malformed one cools nothing")
    func noRow() {
        #expect(Self.cooling(nil, Self.trigger()) == nil)
        #expect(Self.cooling([nil, nil], Self.trigger()) == nil)
        #expect(Self.cooling(["7"], Self.trigger()) == nil)
    }
}
