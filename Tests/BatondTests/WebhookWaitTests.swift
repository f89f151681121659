@testable import batond
import BatonCore
import BatonHooks
import BatonIPC
import BatonService
import Foundation
import Glibc
import Testing

/// Issue 38: a `?wait=` is the loop's, and goes with its client.
@Suite("Webhooks: ?wait= dropped with its client", .timeLimit(.minutes(1)))
struct WebhookWaitTests {
    /// A listener on a real HTTP server over a service whose `hold` action waits for a gate.
    final class Setup {
        let secrets = try! WebhookConfigTests.Secrets()
        let gate = ThreadGate()
        let conductor: Conductor
        let service: Service
        let listener: WebhookListener
        let server: HTTPServer
        /// The number of open waits, each time it changes.
        let waits: AsyncStream<Int>

        init() throws {
            try HMAC.load()
            try secrets.write("gl.secret", "gl-0123456789abcdef-secret\n", mode: 0o600)
            let config = try Config.parse(Data("""
                { actions: { hold: { exec: ["true"] } },
                  webhooks: { listen: "127.0.0.1:0", hooks: { gl: { action: "hold", secret: { file: "\(secrets.directory)/gl.secret" }, signature: "gitlab" } } } }
                """.utf8), file: "t.json5")
            let webhooks = config.webhooks
            conductor = Conductor(actions: [], store: MemoryStore())
            let gate = gate
            conductor.register(Action(name: "hold")) { _ in await gate.wait() }
            let generation = Generation(actions: conductor.configuredActions(), access: AccessPolicy(trigger: .anyone, cancel: .anyone, read: .anyone), owner: 0)
            service = Service(conductor: conductor, history: NoHistory(), journal: MemoryStore(), generation: generation,
                              hooks: Service.Hooks(reload: { _ in .refused("no") }, prune: { dryRun throws(BatonError) in PruneReport(dryRun: dryRun) }),
                              reactor: conductor.reactor)
            let (waits, counts) = AsyncStream.makeStream(of: Int.self)
            self.waits = waits
            listener = WebhookListener(service: service, store: nil, reactor: conductor.reactor, waitsChanged: { counts.yield($0) }, webhooks: { webhooks })
            let listener = listener
            server = try HTTPServer(listening: ListenAddress(host: "127.0.0.1", port: 0), reactor: conductor.reactor) { head, exchange in
                listener.handle(head, exchange)
            }
            server.start()
        }

        /// A connected client that has sent a `?wait=` delivery of `gl`.
        func post(wait: String) -> Int32 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = server.address.port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            precondition(connected == 0, "connect: \(errno)")
            let body = #"{"object_kind":"push","ref":"refs/heads/main"}"#
            let request = "POST /hooks/gl?wait=\(wait) HTTP/1.1\r\nHost: t\r\nX-Gitlab-Token: gl-0123456789abcdef-secret\r\n"
                + "X-Gitlab-Event: Push Hook\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body
            _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
            return fd
        }

        deinit {
            server.stop()
            gate.open()
        }
    }

    /// How many waits the listener holds, asked on the loop.
    static func openWaits(_ listener: WebhookListener) async -> Int {
        await withCheckedContinuation { continuation in
            listener.reactor.post { continuation.resume(returning: listener.openWaits) }
        }
    }

    @Test("a client that goes mid-wait: its wait leaves the listener's table (timer cancelled, run let go), the run goes on")
    func clientGoes() async throws {
        let setup = try Setup()
        var counts = setup.waits.makeAsyncIterator()
        let fd = setup.post(wait: "600s")
        #expect(await counts.next() == 1)
        // The trigger's answer came (the run is loading, its follower registered) before the client goes.
        await setup.gate.entered()
        close(fd)
        #expect(await counts.next() == 0)
        #expect(await Self.openWaits(setup.listener) == 0)
        #expect(setup.conductor.inFlight().map(\.phase) == [.loading])
    }

    @Test("a wait that ends with its run leaves the table too")
    func runEnds() async throws {
        let setup = try Setup()
        var counts = setup.waits.makeAsyncIterator()
        let fd = setup.post(wait: "600s")
        defer { close(fd) }
        #expect(await counts.next() == 1)
        await setup.gate.entered()
        setup.gate.open()
        #expect(await counts.next() == 0)
        var answer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &answer, answer.count, 0)
        #expect(n > 0 && String(decoding: answer[..<max(n, 0)], as: UTF8.self).hasPrefix("HTTP/1.1 200"))
    }

    @Test("a stop's quiesce (endWaits) answers an open wait at once with its run as it is (202), the run goes on")
    func stopAnswers() async throws {
        let setup = try Setup()
        var counts = setup.waits.makeAsyncIterator()
        let fd = setup.post(wait: "600s")
        defer { close(fd) }
        #expect(await counts.next() == 1)
        await setup.gate.entered()
        setup.listener.endWaits()
        #expect(await counts.next() == 0)
        var answer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &answer, answer.count, 0)
        #expect(n > 0 && String(decoding: answer[..<max(n, 0)], as: UTF8.self).hasPrefix("HTTP/1.1 202"))
        #expect(setup.conductor.inFlight().map(\.phase) == [.loading])
    }
}

/// Opens once; every waiter goes on. `entered` returns once a waiter has come.
final class ThreadGate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))
    private let arrivals: AsyncStream<Void>
    private let arrived: AsyncStream<Void>.Continuation

    init() { (arrivals, arrived) = AsyncStream.makeStream(of: Void.self) }

    func entered() async {
        var iterator = arrivals.makeAsyncIterator()
        _ = await iterator.next()
    }

    func wait() async {
        arrived.yield()
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiters.append(waiter) }
                return state.open
            }
            if open { waiter.resume() }
        }
    }
    func open() {
        for waiter in state.withLock({ state in defer { state.open = true; state.waiters = [] }; return state.waiters }) { waiter.resume() }
    }
}

/// A history with nothing in it: the runs these tests make are all in flight.
struct NoHistory: HistoryReader {
    func runs(_ filter: HistoryFilter) async throws(BatonError) -> [RunSnapshot] { [] }
    func run(_ id: Int64) async throws(BatonError) -> RunDetail? { nil }
    func stats(actions: [String], since: Timestamp?) async throws(BatonError) -> [ActionStats] { [] }
    func denied(limit: Int) async throws(BatonError) -> [TriggerRecord] { [] }
    func lastEnded() async throws(BatonError) -> [RunSnapshot] { [] }
    func recentDurations(of actions: [String]) async throws(BatonError) -> [String: [Int64]] { [:] }
}
