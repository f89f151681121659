/// What an authenticated hook request asks for: a press of the hook's action.
public struct HookTrigger: Sendable, Equatable {
    public var hook: String
    public var action: String
    /// Taken from the body by the hook's pointers; the action's patterns are checked where every
    /// trigger's are.
    public var params: [String: String]
    /// The sender's id for this delivery (`X-GitHub-Delivery`, `X-Gitea-Delivery`,
    /// `X-Gitlab-Event-UUID`, `Idempotency-Key`): a second request with it gets the first's run.
    public var delivery: String?
    /// How long the answer waits for the run's outcome (`?wait=30s`); nil: answer at once (202).
    public var wait: Duration?

    public init(hook: String, action: String, params: [String: String] = [:], delivery: String? = nil, wait: Duration? = nil) {
        self.hook = hook
        self.action = action
        self.params = params
        self.delivery = delivery
        self.wait = wait
    }
}
