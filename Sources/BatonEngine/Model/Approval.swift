/// An action whose runs wait for a person's yes (`approve: { by: ["group:ops"], timeout: "1h", self: false }`):
/// a run is created `queued`, holding its key, and starts only once one of `by` approved it; a
/// deny or the timeout ends it `cancelled`, never started.
public struct ApprovalRule: Sendable, Equatable {
    /// Who may approve, as the config wrote it (`group:ops`, `user:alice`): what people are told.
    public var by: [String]
    /// The same, resolved at load to uids and gids.
    public var approvers: AccessRule
    /// How long a run waits, from its creation; nil: until decided or cancelled.
    public var timeout: Duration?
    /// Whether the run's own trigger may approve it (`self: true`); false by default.
    public var allowsSelf: Bool

    public init(by: [String], approvers: AccessRule, timeout: Duration? = nil, allowsSelf: Bool = false) {
        self.by = by
        self.approvers = approvers
        self.timeout = timeout
        self.allowsSelf = allowsSelf
    }

    /// Whether `approver` may decide run `run`: one of `by` (root and batond's owner only where
    /// listed: an approval is another person's yes), and, unless `self: true`, neither its trigger
    /// nor `origin`, the uid whose trigger made it through hooks and needs (a hook run is given
    /// the firing run's params: approving it would approve one's own input). By uid: two names
    /// of one uid are one person. Nil when allowed, else why not.
    public func refusal(_ approver: Approver, of run: RunSnapshot, origin: UInt32? = nil) -> String? {
        guard approvers.admits(uid: approver.uid, groups: approver.groups) else {
            return "\(approver.name) may not approve run \(run.id) of \(run.action): approvals are by \(by.joined(separator: ", "))"
        }
        guard !allowsSelf else { return nil }
        if run.trigger?.uid == approver.uid, Self.samePerson(approver, triggered: run) {
            return "\(approver.name) triggered run \(run.id) of \(run.action) and may not approve it (the action's approve has no self: true)"
        }
        if origin == approver.uid {
            let cause = run.via.map { " (\($0))" } ?? ""
            return "\(approver.name) triggered the run that made run \(run.id) of \(run.action)\(cause) and may not approve it "
                + "(the action's approve has no self: true)"
        }
        return nil
    }

    /// Whether the approver is the one who triggered the run, their uids being equal: so for any
    /// account; for group principals (the team's dashboard: one uid for every person it maps to
    /// a group), only when the run's `via` names the same person, whatever group.
    static func samePerson(_ approver: Approver, triggered run: RunSnapshot) -> Bool {
        guard approver.uid == Peer.groupPrincipalUID else { return true }
        guard let via = run.via else { return true }
        // Without regard to ASCII case, as the dashboard's user map matches names: `Carol@` is `carol@`.
        let person = { (name: String) in
            (name.firstRange(of: " via group:").map { name[..<$0.lowerBound] } ?? name[...]).utf8.map { $0 >= 65 && $0 <= 90 ? $0 + 32 : $0 }
        }
        return person(via) == person(approver.name)
    }
}

/// Who approves or denies: the caller's uid, its name for the history, and every group it is in.
public struct Approver: Sendable, Equatable {
    public var uid: UInt32
    public var name: String
    public var groups: [UInt32]

    public init(uid: UInt32, name: String, groups: [UInt32] = []) {
        self.uid = uid
        self.name = name
        self.groups = groups
    }
}

/// A run's approval as callers see it: what it waits for (who may approve, until when), then
/// how it was decided (approved or denied by whom, or timed out), when and why.
public struct ApprovalState: Codable, Sendable, Equatable {
    public enum Verdict: String, Codable, Sendable {
        case approved, denied
        case timedOut = "timed_out"
        /// Recovery found the action's `approve` removed from the config: the run no longer waits.
        case waived
    }

    /// Who may approve, as the config wrote it.
    public var by: [String]
    /// When the wait ends by itself (nil: never).
    public var until: Timestamp?
    public var verdict: Verdict?
    /// Who decided (a user's name), for an approve or deny.
    public var decidedBy: String?
    public var decidedAt: Timestamp?
    /// A deny's reason.
    public var reason: String?

    public init(by: [String], until: Timestamp?, verdict: Verdict? = nil, decidedBy: String? = nil, decidedAt: Timestamp? = nil,
                reason: String? = nil) {
        self.by = by
        self.until = until
        self.verdict = verdict
        self.decidedBy = decidedBy
        self.decidedAt = decidedAt
        self.reason = reason
    }

    /// Whether it still waits for a decision.
    public var isWaiting: Bool { verdict == nil }

    /// How it was decided, for people: `approved by bob`, `denied by alice: not today`, `timed out`.
    public var decisionText: String? {
        guard let verdict else { return nil }
        switch verdict {
        case .approved: return "approved by \(decidedBy ?? "?")"
        case .denied: return "denied by \(decidedBy ?? "?")" + (reason.map { ": \($0)" } ?? "")
        case .timedOut: return "approval timed out"
        case .waived: return "approval waived: " + (reason ?? "the action no longer asks for one")
        }
    }
}
