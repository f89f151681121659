import BatonCore
import BatonIPC
import FoundationEssentials
import Glibc
import Synchronization

extension Daemon {
    /// The listening socket: passed by systemd, or bound here (and removed at the end).
    final class ListeningSocket: Sendable {
        /// The descriptor, until the server takes it (then it is the server's to close): -1 after.
        let descriptor: Atomic<Int32>
        /// The path clients connect to: ours, or the one systemd bound for us.
        let path: String
        /// The file batond removes when it stops (nil: systemd's socket, which stays).
        let owned: String?
        private let removed = Atomic(false)
        init(fd: Int32, path: String, owned: String?) {
            descriptor = Atomic(fd)
            self.path = path
            self.owned = owned
        }
        /// Removes batond's own socket file, once (a stop's quiesce, then the end), unless a
        /// restart in place passes the socket on.
        func removeFile() {
            guard let owned, !Reexec.isRequested, !removed.exchange(true, ordering: .acquiringAndReleasing) else { return }
            unlink(owned)
        }
        func take() -> Int32? {
            let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
            return fd >= 0 ? fd : nil
        }
    }

    static func listen(_ launch: Launch) throws -> (ListeningSocket, Parts.Stop) {
        if let passed = SocketActivation.passedSocket() {
            // A socket a previous batond made and passed on (a restart in place) goes with batond, unless passed on again.
            let owned = SocketActivation.passed.ownsControl ? launch.socketPath : nil
            let socket = ListeningSocket(fd: passed, path: UnixSocket.boundPath(of: passed) ?? launch.socketPath, owned: owned)
            return (socket, {
                if let fd = socket.take() { close(fd) }
                socket.removeFile()
            })
        }
        let path = launch.socketPath
        do {
            try Paths.ensureParent(of: path, mode: 0o755)
            let group = try launch.config.socketGroup.map { try Self.groupID($0) }
            let socket = ListeningSocket(fd: try UnixSocket.listen(path: path, mode: launch.config.socketMode, group: group), path: path, owned: path)
            return (socket, {
                if let fd = socket.take() { close(fd) }
                // Passed on to the new batond of a restart in place: its file stays.
                socket.removeFile()
            })
        } catch {
            throw DaemonError("cannot listen on \(path): \(error)")
        }
    }

    /// A second stop signal: the quiesce waits no more for its connections (`stop` closes them).
    final class Hurry: Sendable {
        private let state = Mutex<(asked: Bool, ends: [@Sendable () -> Void])>((false, []))
        /// Ends what waits now, and what waits from now on at once.
        func ask() {
            let ends = state.withLock { state in
                defer { state = (true, []) }
                return state.ends
            }
            for end in ends { end() }
        }
        func onAsk(_ end: @escaping @Sendable () -> Void) {
            let asked = state.withLock { state in
                if !state.asked { state.ends.append(end) }
                return state.asked
            }
            if asked { end() }
        }
        var asked: Bool { state.withLock { $0.asked } }
    }
}
