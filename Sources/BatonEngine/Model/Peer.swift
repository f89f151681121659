/// Who sent a request: the credentials of the socket peer (`SO_PEERCRED`), or the process itself.
public struct Peer: Codable, Sendable, Hashable {
    public var uid: UInt32
    public var gid: UInt32
    public var pid: Int32

    public init(uid: UInt32, gid: UInt32, pid: Int32) {
        self.uid = uid
        self.gid = gid
        self.pid = pid
    }
}
