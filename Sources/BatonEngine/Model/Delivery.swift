/// A webhook delivery a trigger carries: the hook, the sender's id for it (`X-GitHub-Delivery`,
/// `Idempotency-Key`, …) and the sender's address. The history keeps it with the run the
/// trigger creates or joins, in the same write, so that no crash and no second host can run a
/// delivery twice: a delivery whose record exists made that run.
public struct Delivery: Sendable, Equatable, Hashable {
    public var hook: String
    /// The sender's id: unique per hook, not across hooks.
    public var id: String
    /// The sender as the listener saw it.
    public var address: String?

    public init(hook: String, id: String, address: String? = nil) {
        self.hook = hook
        self.id = id
        self.address = address
    }
}
