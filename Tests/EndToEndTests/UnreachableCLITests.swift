import Foundation
import Testing

/// What the CLI says when batond cannot be asked: its one-shot questions (status, show, history)
/// and its streaming commands (watch) give the same words and exit code.
@Suite("End to end: the CLI without a batond to ask", .offPool)
struct UnreachableCLITests {
    static let hint = "Try: start it with `batond --config FILE`, or pass --socket PATH (or set BATON_SOCKET)\n"

    @Test("no socket, or a socket nobody listens on: `Error: cannot reach batond at PATH: why`, the Try: line, exit 69", arguments: [
        ["status"], ["actions"], ["watch"],
    ])
    func unreachable(command: [String]) async throws {
        let directory = NSTemporaryDirectory() + "baton-unreachable-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let missing = directory + "/missing.sock"
        let stale = directory + "/stale.sock"
        // A socket file whose listener is gone: connecting is refused.
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in stale.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0)
        close(fd)
        for (path, reason) in [(missing, "No such file or directory"), (stale, "Connection refused")] {
            let result = try await run(Binaries.baton, ["--socket", path] + command)
            #expect(result.code == 69)
            #expect(result.stderr == "Error: cannot reach batond at \(path): \(reason)\n" + Self.hint, "\(command): \(result.stderr)")
            #expect(result.stdout.isEmpty)
        }
    }
}
