import FoundationEssentials
import Glibc

/// systemd socket activation (`sd_listen_fds`): the listening sockets passed from fd 3 on, with
/// their names (`LISTEN_FDNAMES`, `FileDescriptorName=`). The control socket is the Unix one
/// (batond.socket); the webhook listener is the TCP one named `webhooks` (batond-webhooks.socket).
enum SocketActivation {
    /// What systemd passed.
    struct Passed: Equatable {
        var control: Int32?
        var webhooks: Int32?
        /// The control socket is one batond made and passed itself to a restart in place
        /// (`Reexec.ownControlName`): its file goes with batond.
        var ownsControl = false
        /// A webhook socket a previous batond bound itself and passed to a restart in place
        /// (`Reexec.ownWebhooksName`): taken where the config still listens there (`startWebhooks`).
        var ownWebhooks: Int32?
    }

    /// The sockets passed to this process, read once; the variables are removed so that actions
    /// do not inherit them.
    static let passed: Passed = {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        return sockets(environment: ProcessInfo.processInfo.environment, pid: getpid(), family: Self.family(of:))
    }()

    /// The control socket passed, if any.
    static func passedSocket() -> Int32? { passed.control }

    /// The sockets `environment` passes to process `pid`: by name where `LISTEN_FDNAMES` gives
    /// them (`webhooks` is the webhook listener), else by family (a Unix socket is the control one).
    static func sockets(environment: [String: String], pid: Int32, family: (Int32) -> Int32?) -> Passed {
        guard let listener = environment["LISTEN_PID"].flatMap(Int32.init), listener == pid,
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1, count < 64 else { return Passed() }
        let names = environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) } ?? []
        var passed = Passed()
        for index in 0..<count {
            let fd = Int32(3 + index)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let name = index < names.count ? names[index] : ""
            if name == Reexec.ownWebhooksName {
                if passed.ownWebhooks == nil { passed.ownWebhooks = fd }
            } else if name == "webhooks" || (name.isEmpty || name == "unknown") && family(fd).map({ $0 != AF_UNIX }) == true {
                if passed.webhooks == nil { passed.webhooks = fd }
            } else if passed.control == nil {
                passed.control = fd
                passed.ownsControl = name == Reexec.ownControlName
            }
        }
        return passed
    }

    /// The address family of a socket (AF_UNIX, AF_INET, AF_INET6); nil for no socket.
    static func family(of fd: Int32) -> Int32? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return got == 0 ? Int32(storage.ss_family) : nil
    }
}
