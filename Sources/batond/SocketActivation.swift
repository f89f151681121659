import Foundation

/// systemd socket activation (`sd_listen_fds`): the listening socket passed as fd 3.
enum SocketActivation {
    /// The passed socket when LISTEN_PID is this process and LISTEN_FDS is at least 1; the
    /// variables are removed so that actions do not inherit them.
    static func passedSocket(environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32? {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
              let count = environment["LISTEN_FDS"].flatMap(Int.init), count >= 1 else { return nil }
        let fd: Int32 = 3
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }
}
