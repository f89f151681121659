import BatonCore
import BatonIPC
import BatonService
import BatonStore
import Foundation

/// batond's request path in this process: the real store, conductor, request handler and epoll
/// server on a real Unix socket, with in-process actions registered by the benchmark.
final class InProcessDaemon: Sendable {
    let directory: String
    let socket: String
    let store: Store
    let conductor: Conductor
    private let server: Server
    private let service: Service
    private let serving: Task<Void, Never>

    init(name: String, actions: [Action] = [], maxConcurrentRuns: Int, synchronous: Store.Synchronous = .full) throws {
        directory = scratchDirectory(name)
        socket = directory + "/baton.sock"
        store = try Store(path: directory + "/history.sqlite", options: Store.Options(synchronous: synchronous))
        conductor = Conductor(actions: actions, store: store,
                              options: Conductor.Options(maxConcurrentRuns: maxConcurrentRuns, instance: directory))
        service = Service(conductor: conductor, history: store, journal: store,
                          generation: Generation(actions: actions, owner: geteuid()),
                          hooks: Service.Hooks(reload: { _ in .applied(warnings: []) }, prune: { dryRun in PruneReport(dryRun: dryRun) }), reactor: conductor.reactor)
        let fd = try UnixSocket.listen(path: socket, mode: 0o600)
        server = try Server(listening: fd, reactor: conductor.reactor, delegate: service)
        serving = Task.detached { [server] in await server.run() }
    }

    func register(_ action: Action, _ body: @escaping ClosureRunner.Body) async {
        conductor.register(action, body)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            service.update({ $0.actions[action.name] = action }, installed: { done.resume() })
        }
    }

    func stop() async {
        await conductor.shutdown(grace: .seconds(5))
        server.stop()
        await serving.value
        store.close()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A blocking client that speaks raw lines, for tight loops: sends a request line and reads
/// lines until the final answer (one with `"ok"`). Not `Sendable`: each thread that talks to
/// batond opens its own, and the compiler holds it to the thread that made it.
final class LineClient {
    let fd: Int32
    private var buffer: [UInt8] = []
    private var scratch = [UInt8](repeating: 0, count: 65_536)

    init(path: String) throws {
        fd = try UnixSocket.connect(path: path)
    }

    deinit { close(fd) }

    func send(_ line: String) -> Bool {
        var bytes = Array(line.utf8)
        bytes.append(10)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { if n < 0 && errno == EINTR { continue }; return false }
            offset += n
        }
        return true
    }

    /// The next line, without its newline; nil at end of stream.
    func readLine() -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                return line
            }
            let n = scratch.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            buffer.append(contentsOf: scratch[..<n])
        }
    }

    /// Sends one request and reads until its final answer; `event` sees the lines before it.
    func call(_ line: String, event: ([UInt8]) -> Void = { _ in }) -> [UInt8]? {
        guard send(line) else { return nil }
        while let answer = readLine() {
            if Self.isFinal(answer) { return answer }
            event(answer)
        }
        return nil
    }

    /// Whether a response line is a final answer: it has `"ok":` (events do not).
    static func isFinal(_ line: [UInt8]) -> Bool {
        line.withUnsafeBufferPointer { buffer in
            let needle: [UInt8] = Array("\"ok\":".utf8)
            guard buffer.count >= needle.count else { return false }
            for start in 0...(buffer.count - needle.count) where buffer[start] == needle[0] {
                if Array(buffer[start..<start + needle.count]) == needle { return true }
            }
            return false
        }
    }

    static func contains(_ line: [UInt8], _ text: String) -> Bool {
        String(decoding: line, as: UTF8.self).contains(text)
    }
}
