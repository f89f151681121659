import CBatonSystem
import FoundationEssentials
import Glibc

/// Why a socket could not be set up or used.
public enum SocketError: Error, Sendable, CustomStringConvertible {
    case system(String, path: String, errno: Int32)
    case notASocket(path: String)
    case inUse(path: String)
    /// The peer closed the connection before answering.
    case closed

    public var description: String {
        switch self {
        case let .system(call, path, code): "\(call) \(path): \(String(cString: strerror(code)))"
        case let .notASocket(path): "\(path) exists and is not a socket; refusing to remove it"
        case let .inUse(path): "\(path) is in use: another batond is listening there"
        case .closed: "batond closed the connection before answering"
        }
    }

    /// Nobody listens at the path (no file, or a stale socket).
    public var isUnreachable: Bool {
        if case let .system(_, _, code) = self { return code == ENOENT || code == ECONNREFUSED }
        return false
    }
}

/// Unix stream sockets: listen with a mode and group set before anyone can connect, connect.
public enum UnixSocket {
    /// Creates a listening socket at `path` with `mode` (and `group` when given).
    ///
    /// The socket is bound at a temporary name, given its mode and group, then renamed into
    /// place, so there is no moment when it is reachable with looser permissions. An existing
    /// path is replaced only when it is a socket nobody listens on.
    public static func listen(path: String, mode: mode_t = 0o660, group: gid_t? = nil, backlog: Int32 = 1024) throws(SocketError) -> Int32 {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else { throw .notASocket(path: path) }
            if let probe = try? connect(path: path) {
                close(probe)
                throw .inUse(path: path)
            }
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", path: path, errno: errno) }
        let temporary = path + ".\(getpid()).new"
        unlink(temporary)
        func fail(_ call: String) -> SocketError {
            let code = errno
            close(fd)
            unlink(temporary)
            return .system(call, path: path, errno: code)
        }
        guard baton_unix_bind(fd, temporary) == 0 else { throw fail("bind") }
        guard chmod(temporary, mode) == 0 else { throw fail("chmod") }
        if let group, chown(temporary, uid_t.max, group) != 0 { throw fail("chown") }
        guard Glibc.listen(fd, backlog) == 0 else { throw fail("listen") }
        guard rename(temporary, path) == 0 else { throw fail("rename") }
        return fd
    }

    /// Connects to the socket at `path`; returns a blocking, close-on-exec descriptor.
    public static func connect(path: String) throws(SocketError) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("socket", path: path, errno: errno) }
        guard baton_unix_connect(fd, path) == 0 else {
            let code = errno
            close(fd)
            throw .system("connect", path: path, errno: code)
        }
        return fd
    }

    /// The filesystem path a listening Unix socket is bound to (getsockname), if it has one.
    public static func boundPath(of fd: Int32) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard rc == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        let path = withUnsafeBytes(of: address.sun_path) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        return path.isEmpty ? nil : path
    }
}
