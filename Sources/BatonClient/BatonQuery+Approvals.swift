import BatonCore

extension BatonQuery where Value == RunSnapshot {
    /// Approves run `run` (its action's `approve`): the run as the approval left it (started, or
    /// waiting for what else holds it). `.forbidden` when the caller may not approve it (not one
    /// of `by`, or its own trigger), `.notWaiting` when it was decided already or is not waiting.
    public static func approve(_ run: Int64) -> Self {
        Self(Request(op: .approve, run: run)) { try decided($0, run) }
    }

    /// Denies run `run`, saying why: it ends cancelled ("denied by alice: why"), never started.
    public static func deny(_ run: Int64, reason: String? = nil) -> Self {
        Self(Request(op: .deny, run: run, reason: reason)) { try decided($0, run) }
    }

    private static func decided(_ response: Response, _ run: Int64) throws -> RunSnapshot {
        guard let snapshot = response.run else { throw BatonClientError.internal("batond answered the decision on run \(run) without the run") }
        return snapshot
    }
}

extension BatonQuery where Value == [RunSnapshot] {
    /// The runs waiting for the caller's approval now, oldest first: of actions whose `approve.by`
    /// includes them, their own triggers' excluded unless the action says `self: true`.
    public static var approvals: Self { Self(Request(op: .approvals)) { $0.runs ?? [] } }
}

extension BatonClient {
    /// Approves run `run`: see `BatonQuery.approve`.
    @discardableResult
    public func approve(_ run: Int64) async throws -> RunSnapshot { try await ask(.approve(run)) }

    /// Denies run `run` with `reason`: see `BatonQuery.deny`.
    @discardableResult
    public func deny(_ run: Int64, reason: String? = nil) async throws -> RunSnapshot { try await ask(.deny(run, reason: reason)) }

    /// The runs waiting for the caller's approval: see `BatonQuery.approvals`.
    public func approvals() async throws -> [RunSnapshot] { try await ask(.approvals) }
}
