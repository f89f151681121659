import BatonCore
import CBatonSystem
import FoundationEssentials
import Glibc
import Synchronization

/// A restart in place (issue 41, part 1, step 3; SIGUSR2): batond hands its runs over as for a
/// stop, then `execve`s its executable as found on disk when it started (so that an upgraded
/// package runs the new binary), with the same pid and arguments, and its control socket kept
/// open and passed as systemd passes sockets (`LISTEN_FDS`, `LISTEN_PID`, `LISTEN_FDNAMES`): a
/// connection made meanwhile waits in the socket's backlog and is answered by the new batond.
/// Under systemd, `RELOADING=1` goes before and the new process's `READY=1` after, and the
/// variables the notifier took (`NOTIFY_SOCKET`, the watchdog's) are given back.
enum Reexec {
    /// The name a socket batond made itself is passed under: the new batond removes its file at
    /// exit, as the old one would have (a socket systemd passed is systemd's).
    static let ownControlName = "batond-control"
    /// The name a webhook socket batond bound itself (`webhooks.listen`) is passed under: the new
    /// batond takes it where its config still listens at that address, else closes it.
    static let ownWebhooksName = "batond-webhooks"

    /// What the exec keeps: the sockets (a duplicate of each, by name) and the notifier's variables.
    struct Plan: Sendable {
        var sockets: [(name: String, fd: Int32)] = []
        var environment: [String: String] = [:]
    }

    /// The executable as found at start: `argv[0]` made absolute against the directory batond
    /// started in, or looked up in `PATH` (never /proc/self/exe, which names a deleted file once
    /// a package upgrade replaced it).
    static let executable: String? = {
        guard let name = CommandLine.arguments.first, !name.isEmpty else { return nil }
        if name.hasPrefix("/") { return name }
        if name.contains("/") { return FileManager.default.currentDirectoryPath + "/" + name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
    }()

    private static let planned = Mutex<Plan?>(nil)

    /// Why the executable cannot be executed now (removed, not a file, not executable, not a
    /// program), or nil: asked before a restart stops anything, so that a restart that could
    /// only fail is refused and batond serves on (an `execve` that fails after the stop cannot
    /// go back: batond exits, and systemd starts it again).
    static func problem() -> String? {
        guard let executable else { return "the executable batond was started from is not known" }
        var info = stat()
        guard stat(executable, &info) == 0 else { return "\(executable): \(String(cString: strerror(errno)))" }
        guard info.st_mode & S_IFMT == S_IFREG else { return "\(executable) is not a regular file" }
        guard access(executable, X_OK) == 0 else { return "\(executable) is not executable: \(String(cString: strerror(errno)))" }
        let fd = open(executable, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "\(executable) cannot be read: \(String(cString: strerror(errno)))" }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 4)
        let n = head.withUnsafeMutableBytes { read(fd, $0.baseAddress, 4) }
        guard n == 4, head == [0x7F, 0x45, 0x4C, 0x46] || head.starts(with: [0x23, 0x21]) else {
            return "\(executable) is not a program (no ELF header, no #!)"
        }
        return nil
    }

    /// Asks for the exec once batond has stopped: `sockets` are duplicated now (the server closes
    /// its own descriptor when it stops; the duplicate keeps the socket and its backlog open).
    static func request(sockets: [(name: String, fd: Int32)], notifier: Notifier) {
        var plan = Plan()
        for (name, fd) in sockets {
            let copy = fcntl(fd, F_DUPFD_CLOEXEC, 3)
            if copy >= 0 { plan.sockets.append((name, copy)) }
        }
        if let socket = notifier.socket { plan.environment["NOTIFY_SOCKET"] = socket }
        if let usec = notifier.watchdogMicroseconds {
            plan.environment["WATCHDOG_USEC"] = String(usec)
            plan.environment["WATCHDOG_PID"] = String(getpid())
        }
        planned.withLock { $0 = plan }
    }

    static var isRequested: Bool { planned.withLock { $0 != nil } }

    /// A stop signal during the restart: batond exits instead (the duplicates close with it).
    static func cancel() { planned.withLock { $0 = nil } }

    /// On the main thread, once the daemon has returned: replaces this process with the
    /// executable, or returns (with why it could not) and batond exits.
    static func performIfRequested() -> String? {
        guard let plan = planned.withLock({ $0 }) else { return nil }
        guard let executable else { return "cannot restart in place: the executable batond was started from is not known" }
        // The sockets on 3, 4, …: moved above the range first, so that one never overwrites another.
        var high: [Int32] = []
        for socket in plan.sockets { high.append(fcntl(socket.fd, F_DUPFD, 100)) }
        for (index, fd) in high.enumerated() where fd >= 0 {
            dup2(fd, Int32(3 + index))
            _ = fcntl(Int32(3 + index), F_SETFD, 0)
            close(fd)
        }
        var environment = ProcessInfo.processInfo.environment.merging(plan.environment) { $1 }
        environment["LISTEN_PID"] = String(getpid())
        environment["LISTEN_FDS"] = String(plan.sockets.count)
        environment["LISTEN_FDNAMES"] = plan.sockets.map(\.name).joined(separator: ":")
        // Across the exec, SIGUSR2 is ignored (a handler would be reset to the default, which
        // kills) and SIGHUP stays blocked, pending, until the new image's watcher takes them (main.swift).
        signal(SIGUSR2, SIG_IGN)
        var held = sigset_t()
        sigemptyset(&held)
        sigaddset(&held, SIGHUP)
        pthread_sigmask(SIG_SETMASK, &held, nil)
        let argv = CommandLine.arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }
        let failure = withCStrings(argv) { argvp in withCStrings(envp) { envpp in execve(executable, argvp, envpp) } }
        return "cannot restart in place: execve \(executable): \(String(cString: strerror(errno))) (\(failure))"
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
