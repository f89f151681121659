import BatonCore

/// One generation of the config as requests see it: the actions by name (their patterns already
/// compiled) and the access rules, with the socket's group already resolved. Built once at start
/// and at each reload, and swapped whole, so a request is checked and served against one.
public struct Generation: Sendable {
    public var actions: [String: Action] { didSet { sortedActions = Self.sorted(actions) } }
    /// The actions sorted by name, kept with them (every status and list answer walks them in order).
    public private(set) var sortedActions: [Action]
    public var access: AccessPolicy
    /// The daemon's own user, who (like root) may always act.
    public var owner: UInt32

    public init(actions: [Action], access: AccessPolicy = AccessPolicy(trigger: .anyone, cancel: .anyone), owner: UInt32) {
        let byName = Dictionary(actions.map { ($0.name, $0) }, uniquingKeysWith: { _, last in last })
        self.actions = byName
        self.sortedActions = Self.sorted(byName)
        self.access = access
        self.owner = owner
    }

    private static func sorted(_ actions: [String: Action]) -> [Action] { actions.values.sorted { $0.name < $1.name } }
}
