import BatonIPC
import Foundation
import Testing

/// `TCPPeer.uid`: the owner of a loopback client's socket, from the kernel's socket table.
@Suite("TCP peer uid", .serialized, .offPool)
struct TCPPeerTests {
    /// A blocking listener on a loopback address, port chosen by the kernel.
    final class Listener {
        let fd: Int32
        let port: UInt16
        let family: Int32

        init(ipv6: Bool = false) throws {
            family = ipv6 ? AF_INET6 : AF_INET
            let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            self.fd = fd
            var storage = sockaddr_storage()
            var length: socklen_t
            if ipv6 {
                var address = sockaddr_in6()
                address.sin6_family = sa_family_t(AF_INET6)
                address.sin6_addr = in6addr_loopback
                withUnsafeBytes(of: address) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
                length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            } else {
                var address = sockaddr_in()
                address.sin_family = sa_family_t(AF_INET)
                address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
                withUnsafeBytes(of: address) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
                length = socklen_t(MemoryLayout<sockaddr_in>.size)
            }
            let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
            guard bound == 0, listen(fd, 8) == 0 else {
                close(fd)
                throw POSIXError(.EADDRNOTAVAIL)
            }
            var actual = sockaddr_storage()
            var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) } }
            port = withUnsafeBytes(of: actual) { bytes -> UInt16 in
                UInt16(bigEndian: bytes.load(fromByteOffset: 2, as: UInt16.self))
            }
        }
        deinit { close(fd) }

        func accept() -> Int32 { Glibc.accept(fd, nil, nil) }
    }

    /// Connects from this process.
    static func connectHere(_ listener: Listener) throws -> Int32 {
        let host = listener.family == AF_INET6 ? "::1" : "127.0.0.1"
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST
        var found: UnsafeMutablePointer<addrinfo>?
        try #require(getaddrinfo(host, String(listener.port), &hints, &found) == 0)
        defer { freeaddrinfo(found) }
        let fd = socket(found!.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        try #require(connect(fd, found!.pointee.ai_addr, found!.pointee.ai_addrlen) == 0)
        return fd
    }

    @Test("a client of this process over IPv4 and IPv6 loopback: its uid is ours", arguments: [false, true])
    func ownClient(ipv6: Bool) throws {
        let listener: Listener
        do { listener = try Listener(ipv6: ipv6) } catch { return }  // no IPv6 loopback here
        let client = try Self.connectHere(listener)
        defer { close(client) }
        let accepted = listener.accept()
        defer { close(accepted) }
        #expect(TCPPeer.uid(of: accepted) == geteuid())
    }

    @Test("a client that runs as nobody: its uid is nobody's, not ours")
    func otherUser() throws {
        try #require(geteuid() == 0, "needs root to run a client as another user")
        let listener = try Listener()
        let client = Process()
        client.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        client.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash", "-c",
                            "exec 3<>/dev/tcp/127.0.0.1/\(listener.port) && echo connected && read"]
        let input = Pipe(), output = Pipe()
        client.standardInput = input
        client.standardOutput = output
        try client.run()
        defer { try? input.fileHandleForWriting.close(); client.waitUntilExit() }
        let line = output.fileHandleForReading.availableData
        try #require(String(decoding: line, as: UTF8.self).contains("connected"))
        let accepted = listener.accept()
        defer { close(accepted) }
        #expect(TCPPeer.uid(of: accepted) == 65534)
    }

    @Test("not a TCP connection: a pipe, a listener, a Unix socket pair, a closed descriptor: nil")
    func notTCP() throws {
        var pipeFDs: [Int32] = [0, 0]
        try #require(pipe(&pipeFDs) == 0)
        defer { close(pipeFDs[0]); close(pipeFDs[1]) }
        #expect(TCPPeer.uid(of: pipeFDs[0]) == nil)
        let listener = try Listener()
        #expect(TCPPeer.uid(of: listener.fd) == nil)
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        defer { close(pair[0]); close(pair[1]) }
        #expect(TCPPeer.uid(of: pair[0]) == nil)
        #expect(TCPPeer.uid(of: -1) == nil)
    }
}
