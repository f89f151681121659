/// A request to run an action.
public struct TriggerRequest: Sendable {
    public var action: String
    public var params: [String: String]
    /// A policy other than the action's own, where the action allows it.
    public var policy: Policy?
    public var peer: Peer?
    /// Whether the caller follows the run to its end (false: detach).
    public var wait: Bool
    /// Run even inside the action's cooldown window, where the action allows `force`.
    public var force: Bool

    public init(action: String, params: [String: String] = [:], policy: Policy? = nil, peer: Peer? = nil, wait: Bool = true,
                force: Bool = false) {
        self.force = force
        self.action = action
        self.params = params
        self.policy = policy
        self.peer = peer
        self.wait = wait
    }
}
