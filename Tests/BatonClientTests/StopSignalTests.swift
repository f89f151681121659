@testable import BatonClient
import BatonCore
import Foundation
import Testing

/// The watch's stop signal (`StopSignal`): its pipe is close-on-exec from the start, and a watch
/// whose signal has no pipe ends at once rather than run on a thread nobody can stop.
@Suite("The watch's stop signal")
struct StopSignalTests {
    @Test("both ends are close-on-exec and the write end is non-blocking; given, it is seen at once and stays given")
    func made() {
        let signal = StopSignal()
        #expect(signal.fd >= 0 && signal.error == 0)
        #expect(fcntl(signal.fd, F_GETFD) & FD_CLOEXEC != 0)
        #expect(!signal.given())
        signal.give()
        #expect(signal.given() && signal.given())
    }

    @Test("no pipe (out of descriptors): the watch's stream ends throwing unavailable, naming why, and no thread is left watching")
    func noPipe() async throws {
        let signal = StopSignal(pipes: { _ in errno = EMFILE; return -1 })
        #expect(signal.fd == -1 && signal.error == EMFILE)
        let (stream, continuation) = AsyncThrowingStream<RunUpdate, any Error>.makeStream()
        // A socket nobody listens on: a thread, had one started, would try it again and again.
        let watch = ReconnectingWatch(socket: "/nonexistent/baton.sock", action: nil, progress: false, bound: .seconds(3600),
                                      started: {}, skipped: { _ in }, stop: signal)
        watch.start(continuation)
        do {
            for try await _ in stream { Issue.record("an update came") }
            Issue.record("the stream ended without an error")
        } catch let error as BatonClientError {
            guard case let .unavailable(message) = error else { Issue.record("\(error)"); return }
            #expect(message.contains("Too many open files"), "\(message)")
        }
    }
}
