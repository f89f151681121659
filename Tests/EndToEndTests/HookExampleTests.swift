import Foundation
import Testing

/// examples/hooks: the chat webhook and the healthchecks-style ping, run by real hooks against a
/// local HTTP listener that keeps what they sent.
/// The example scripts need curl and jq.
let hookExampleToolsPresent = ["/usr/bin/curl", "/usr/bin/jq"].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }

@Suite("End to end: the example hooks", .serialized, .enabled(if: hookExampleToolsPresent), .offPool)
struct HookExampleTests {

    static let examples = Container.repository + "/examples/hooks"

    @Test("examples/hooks/hooks.json5 passes batond --check-config")
    func checked() throws {
        let checked = try execute(Binaries.batond, ["--check-config", Self.examples + "/hooks.json5"])
        #expect(checked.code == 0, "\(checked.stdout) \(checked.stderr)")
    }

    @Test("a failing backup posts its summary and output tail to the chat webhook and pings the check's /fail; a success pings the check")
    func posts() throws {
        let listener = try HTTPRecorder()
        let url = "http://127.0.0.1:\(listener.port)"
        let config = """
            {
              actions: {
                backup: { exec: ["sh", "-c", "echo dumping; if [ \\"$BATON_PARAM_OK\\" = no ]; then echo 'disk full' >&2; exit 1; fi"],
                          params: { ok: { default: "yes" } }, policy: "join", on: { failure: "check", success: "check", change: "chat" } },
                chat: { exec: ["\(Self.examples)/post-webhook.sh"], env: { WEBHOOK_URL: "\(url)/chat" }, policy: "queue" },
                check: { exec: ["\(Self.examples)/ping-healthcheck.sh"], env: { CHECK_URL: "\(url)/check" }, policy: "queue" },
              },
            }
            """
        let daemon = try Daemon(config: config)
        defer { daemon.stop() }
        #expect(try daemon.baton("run", "backup").code == 0)
        let ok = try #require(listener.next())
        #expect(ok.hasPrefix("POST /check HTTP/1.1") && ok.hasSuffix("dumping\n"), "\(ok)")
        #expect(try daemon.baton("run", "backup", "-p", "ok=no").code != 0)
        let sent = try [#require(listener.next()), #require(listener.next())].sorted()
        #expect(sent[0].hasPrefix("POST /chat HTTP/1.1") && sent[0].contains("application/json"), "\(sent[0])")
        let body = try #require(sent[0].components(separatedBy: "\r\n\r\n").last)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let text = try #require(json["text"] as? String)
        #expect(text.hasPrefix("backup run 3 (backup): failure, exit 1") && text.contains("disk full"), "\(text)")
        #expect((json["baton"] as? [String: Any])?["event"] as? String == "change", "\(json)")
        #expect(sent[1].hasPrefix("POST /check/fail HTTP/1.1") && sent[1].contains("disk full"), "\(sent[1])")
    }
}

/// A local HTTP listener that answers 200 to each request and keeps it (head and body) for `next`.
final class HTTPRecorder: @unchecked Sendable {
    let port: UInt16
    private let fd: Int32
    /// Guards `requests`.
    private let lock = NSLock()
    private var requests: [String] = []
    private let arrived = DispatchSemaphore(value: 0)

    init() throws {
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listening, $0, length) == 0 && listen(listening, 16) == 0 && getsockname(listening, $0, &length) == 0
            }
        }
        guard bound else {
            close(listening)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        fd = listening
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listening, nil, nil)
                guard client >= 0 else { return }
                let request = Self.read(client)
                _ = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nOK".withCString { write(client, $0, strlen($0)) }
                close(client)
                lock.withLock { requests.append(request) }
                arrived.signal()
            }
        }
    }

    deinit { shutdown(fd, Int32(SHUT_RDWR)); close(fd) }

    /// The next request, oldest first; nil if none comes within a minute (a guard against a hang, not a timing).
    func next() -> String? {
        guard arrived.wait(timeout: .now() + 60) == .success else { return nil }
        return lock.withLock { requests.removeFirst() }
    }

    /// The head, then as many body bytes as its Content-Length says.
    private static func read(_ client: Int32) -> String {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(client, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            bytes += buffer[..<n]
            let text = String(decoding: bytes, as: UTF8.self)
            guard let end = text.range(of: "\r\n\r\n") else { continue }
            let head = text[..<end.lowerBound].lowercased()
            let length = head.components(separatedBy: "\r\n").first { $0.hasPrefix("content-length:") }
                .flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
            if bytes.count - (text[..<end.upperBound].utf8.count) >= length { break }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
