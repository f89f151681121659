import Foundation

/// A real `baton dashboard` on a daemon's socket: the addresses it prints, a session traded for
/// one of their codes, and a stop at the end. Its stdin is a FIFO, so that a test can press Enter
/// for a new address as its owner would.
final class DashboardProcess: @unchecked Sendable {
    let child: Spawned
    /// The first address it printed; its one-time code is still unused.
    private(set) var url = ""
    /// `127.0.0.1:PORT`
    private(set) var hostPort = ""
    private let fifo: String
    private let input: Int32
    private var printed = ""
    private var taken = 0
    private var cachedSession: String?

    /// Starts `baton dashboard` (through `launcher`, such as setpriv, when given) and reads its address.
    init(socket: String, arguments: [String] = [], launcher: [String] = [], environment: [String: String] = [:]) throws {
        fifo = NSTemporaryDirectory() + "/baton-dashboard-stdin-" + UUID().uuidString
        guard mkfifo(fifo, 0o600) == 0, chmod(fifo, 0o666) == 0 else { throw DashboardError("mkfifo: errno \(errno)") }
        // Read and write: opening does not wait for the other end, and the dashboard never sees an end of file.
        input = open(fifo, O_RDWR | O_CLOEXEC)
        child = try Spawned(launcher + ["/bin/sh", "-c", #"exec "$@" < "$0""#, fifo, Binaries.baton, "--socket", socket, "dashboard"] + arguments,
                            environment: environment)
        let first = try nextAddress()
        url = first
        hostPort = String(first.dropFirst("http://".count).prefix { $0 != "/" })
    }

    deinit {
        close(input)
        unlink(fifo)
    }

    func stop() { child.stop() }

    var port: UInt16 { UInt16(hostPort.split(separator: ":").last!)! }

    /// What the dashboard printed on stdout so far.
    var output: String { printed }

    /// The next address the dashboard prints (the banner's, then one per Enter).
    func nextAddress() throws -> String {
        while Self.addresses(in: printed).count <= taken {
            let known = printed
            let more = child.readStdout { Self.addresses(in: known + $0).count > self.taken && $0.hasSuffix("\n") }
            guard !more.isEmpty else { throw DashboardError("baton dashboard printed no address: \(printed) \(child.availableStderr())") }
            printed += more
        }
        taken += 1
        return Self.addresses(in: printed)[taken - 1]
    }

    /// Presses Enter where the dashboard runs: a new address with a fresh code.
    func newAddress() throws -> String {
        _ = write(input, "\n", 1)
        return try nextAddress()
    }

    /// A session for this test's own requests, traded for a fresh code (once; then kept).
    func session() throws -> String {
        if let cachedSession { return cachedSession }
        let answer = try signIn(code: Self.code(of: try newAddress()))
        guard answer.status == 200, let token = Self.field("session", in: answer.body) else {
            throw DashboardError("sign-in refused: \(answer.status) \(answer.body)")
        }
        cachedSession = token
        return token
    }

    /// `POST /api/session` with `code`, as the page does.
    func signIn(code: String) throws -> HTTPProbe.Answer {
        try HTTPProbe.request(port: port, "POST", "/api/session",
                              fields: ["Origin": "http://\(hostPort)", "Content-Type": "application/json"], body: #"{"code":"\#(code)"}"#)
    }

    /// The Authorization field of a signed-in page.
    func authorization() throws -> [String: String] { ["Authorization": "Bearer \(try session())"] }

    static func addresses(in text: String) -> [String] {
        text.split(separator: "\n").filter { $0.contains("/#code=") }.map { $0.trimmingCharacters(in: .whitespaces) }
    }

    static func code(of address: String) -> String {
        String(address[address.range(of: "#code=")!.upperBound...])
    }

    /// A string field of a flat JSON answer.
    static func field(_ name: String, in json: String) -> String? {
        let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return object?[name] as? String
    }
}

struct DashboardError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
