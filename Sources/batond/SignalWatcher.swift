import BatonCore
import CBatonSystem
import Dispatch
import FoundationEssentials
import Glibc
import Synchronization

/// Delivers signals as an async stream. A C handler, installed before this returns, writes each
/// signal's number to a pipe that the reactor watches: a signal sent the moment batond says
/// "ready" is never lost (a dispatch signal source installs its handler later, on another
/// thread, and a SIGTERM sent before that was ignored, so batond never stopped).
final class SignalWatcher: Sendable {
    let stream: AsyncStream<Int32>
    private let continuation: AsyncStream<Int32>.Continuation
    private let fd: Int32
    private let reactor: Reactor
    /// Signalled once the handlers are installed (or batond ends without them): the main thread,
    /// which holds SIGHUP blocked until then, unblocks it when `isInstalled` (main.swift).
    static let installed = DispatchSemaphore(value: 0)
    static let isInstalled = Atomic<Bool>(false)

    init(_ signals: [Int32], reactor: Reactor) {
        self.reactor = reactor
        (stream, continuation) = AsyncStream<Int32>.makeStream()
        Glibc.signal(SIGPIPE, SIG_IGN)
        fd = signals.withUnsafeBufferPointer { baton_signal_pipe($0.baseAddress, Int32($0.count)) }
        precondition(fd >= 0, "cannot install signal handlers: \(String(cString: strerror(errno)))")
        Self.isInstalled.store(true, ordering: .releasing)
        Self.installed.signal()
        let (fd, continuation) = (fd, continuation)
        reactor.watch(fd) { _ in
            var bytes = [UInt8](repeating: 0, count: 64)
            while true {
                let n = read(fd, &bytes, bytes.count)
                guard n > 0 else { return }
                for byte in bytes[..<n] { continuation.yield(Int32(byte)) }
            }
        }
    }

    /// Takes `signals` too, from now on: their handlers write to the same pipe.
    func take(_ signals: [Int32]) {
        let rc = signals.withUnsafeBufferPointer { baton_signal_route($0.baseAddress, Int32($0.count)) }
        precondition(rc == 0, "cannot install signal handlers: \(String(cString: strerror(errno)))")
    }

    func finish() {
        reactor.remove(fd)
        continuation.finish()
    }
}
