/// Who sent a request: the credentials of the socket peer (`SO_PEERCRED`), or the process itself.
public struct Peer: Codable, Sendable, Hashable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32
    /// A group principal's name for the history (`alice@example.org via group:staff`): a person the
    /// team's dashboard serves as a local group (`asGroup`), who has no account here. Their uid is
    /// `groupPrincipalUID` (in no rule), their only group `gid`. Nil for every account.
    public var principal: String?

    public init(uid: UInt32, gid: UInt32, pid: Int32, principal: String? = nil) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
        self.principal = principal
    }

    /// The uid a group principal is served as: `(uid_t)-2`, no account's, named by no rule, so that
    /// only the rules of the principal's group (and those for everyone) admit it.
    public static let groupPrincipalUID: UInt32 = 0xFFFF_FFFE

    /// Whether this peer is a group principal (`asGroup`), not an account.
    public var isGroupPrincipal: Bool { uid == Self.groupPrincipalUID && principal != nil }
}
