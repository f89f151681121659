import CBatonSystem

/// Who is at the other end of a TCP connection, where the kernel can say.
public enum TCPPeer {
    /// The uid that owns the peer's socket when it is a socket of this host (a loopback client,
    /// or one on another of this machine's addresses); nil for a peer on another host, or a
    /// descriptor that is no TCP connection. `SO_PEERCRED` exists for Unix sockets only; the
    /// socket table (`NETLINK_SOCK_DIAG`) knows the owner of every local TCP socket.
    public static func uid(of fd: Int32) -> UInt32? {
        var uid: UInt32 = 0
        return baton_tcp_peer_uid(fd, &uid) == 0 ? uid : nil
    }
}
