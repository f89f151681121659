/// What a request needs to be allowed to do.
public enum Permission: String, Codable, Sendable, CaseIterable {
    /// Start runs of an action (and join, queue or replace).
    case trigger
    /// Cancel runs of an action.
    case cancel
    /// See an action's runs: status, history, show, stats, watch, wait.
    case read
    /// Pause and resume an action (`baton pause`, `baton resume`): root and the daemon's own user,
    /// and whom `allow: { pause: … }` names.
    case pause
    /// Reload the config and prune the history: root and the daemon's own user only.
    case admin
}

/// Who holds one permission: listed users, members of listed groups, or everyone.
public struct AccessRule: Sendable, Equatable {
    public var users: Set<UInt32>
    public var groups: Set<UInt32>
    public var everyone: Bool

    public init(users: Set<UInt32> = [], groups: Set<UInt32> = [], everyone: Bool = false) {
        self.users = users
        self.groups = groups
        self.everyone = everyone
    }

    /// Nobody but root and the daemon's own user.
    public static let nobody = AccessRule()
    public static let anyone = AccessRule(everyone: true)

    public func admits(uid: UInt32, groups memberOf: [UInt32]) -> Bool {
        everyone || users.contains(uid) || memberOf.contains { groups.contains($0) }
    }
}

/// Who may trigger, cancel and read: the global rules, each of which an action may replace.
public struct AccessPolicy: Sendable, Equatable {
    public var trigger: AccessRule
    public var cancel: AccessRule
    public var read: AccessRule
    public var pause: AccessRule

    public init(trigger: AccessRule = .nobody, cancel: AccessRule = .nobody, read: AccessRule = .anyone, pause: AccessRule = .nobody) {
        self.trigger = trigger
        self.cancel = cancel
        self.read = read
        self.pause = pause
    }

    /// Per-action rules: each one set replaces the global one.
    public struct Override: Sendable, Equatable {
        public var trigger: AccessRule?
        public var cancel: AccessRule?
        public var read: AccessRule?
        public var pause: AccessRule?

        public init(trigger: AccessRule? = nil, cancel: AccessRule? = nil, read: AccessRule? = nil, pause: AccessRule? = nil) {
            self.trigger = trigger
            self.cancel = cancel
            self.read = read
            self.pause = pause
        }
    }

    /// The rule for a permission on an action (or globally, with no action).
    public func rule(_ permission: Permission, for action: Action?) -> AccessRule {
        switch permission {
        case .trigger: action?.allow?.trigger ?? trigger
        case .cancel: action?.allow?.cancel ?? cancel
        case .read: action?.allow?.read ?? read
        case .pause: action?.allow?.pause ?? pause
        case .admin: .nobody
        }
    }

    /// Whether a peer (its uid, and every group it is in) may do `permission` on `action`.
    /// Root and `owner` (the daemon's own user) may always act.
    public func allows(_ permission: Permission, action: Action?, uid: UInt32, groups: [UInt32], owner: UInt32) -> Bool {
        if uid == 0 || uid == owner { return true }
        return rule(permission, for: action).admits(uid: uid, groups: groups)
    }
}
