import CBatonSystem
import Glibc

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

    /// The numeric address of the peer of a connected socket: IPv4 as `203.0.113.7`, IPv6 as
    /// `2001:db8::1` (an IPv4-mapped one as its IPv4 address); nil when it has none.
    public static func address(of fd: Int32) -> String? {
        numeric(fd, getpeername)?.host
    }

    /// The address a listening or connected socket is bound to (numeric host and port).
    public static func localAddress(of fd: Int32) -> ListenAddress? {
        numeric(fd, getsockname).map { ListenAddress(host: $0.host, port: $0.port) }
    }

    private static func numeric(_ fd: Int32, _ name: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32)
        -> (host: String, port: UInt16)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { name(fd, $0, &length) }
        }
        guard got == 0 else { return nil }
        var port: UInt16 = 0
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch Int32(storage.ss_family) {
        case AF_INET:
            var address = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr } }
            port = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) } }
            guard inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil else { return nil }
        case AF_INET6:
            var address = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr } }
            port = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) } }
            guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return nil }
        default:
            return nil
        }
        let numeric = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (numeric.hasPrefix("::ffff:") && numeric.contains(".") ? String(numeric.dropFirst(7)) : numeric, port)
    }
}
