import BatonCore
import Foundation
import Testing

/// Another local user holding an HTTP server's connections (issue 21, item 16).
@Suite("End to end: a flood of connections from another uid", .serialized, .offPool)
struct HTTPFloodTests {
    /// 70 connections from nobody, each sending a head that never ends and reconnecting as soon
    /// as it is closed (refused, or timed out), until `stop`.
    final class Flood {
        let process = Process()
        let input = Pipe(), output = Pipe()

        /// Returns once every connection has been opened once (each says so).
        init(port: UInt16, connections: Int = 70) throws {
            let loop = "while :; do exec 3<>/dev/tcp/127.0.0.1/\(port) || exit 1; printf 'GET /metrics HTTP/1.1\\r\\n' >&3; "
                + "[ -n \"$up\" ] || { up=1; echo up; }; while read -r -u 3 line; do :; done; exec 3<&-; sleep 0.2; done"
            let script = "for i in $(seq \(connections)); do ( \(loop) ) & done; read; kill -9 $(jobs -p) 2>/dev/null; wait"
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash", "-c", script]
            process.standardInput = input
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            var ups = 0
            while ups < connections {
                let chunk = output.fileHandleForReading.availableData
                try #require(!chunk.isEmpty, "the flood ended before it was up")
                ups += String(decoding: chunk, as: UTF8.self).components(separatedBy: "up\n").count - 1
            }
        }

        func stop() {
            try? input.fileHandleForWriting.close()
            process.waitUntilExit()
        }
    }

    @Test("nobody holds 70 connections to /metrics, reconnecting; batond's owner is still answered 200, and nobody's extras get 503 naming its uid")
    func ownerServedDuringFlood() throws {
        try #require(geteuid() == 0, "needs root to run the flood as nobody")
        let daemon = try Daemon(config: MetricsEndToEndTests.config)
        let port = try MetricsEndToEndTests.port(of: daemon)
        let flood = try Flood(port: port)
        defer { flood.stop() }
        for _ in 0..<5 {
            let answer = try MetricsEndToEndTests.TCP.exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer.prefix(200))")
        }
        // nobody's own extra connection is refused by its share, not by the total (it sends
        // nothing: a refusal closes at once, and unread input would turn the close into a reset).
        let extra = try execute("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash", "-c",
                                                      "exec 3<>/dev/tcp/127.0.0.1/\(port); cat <&3"])
        #expect(extra.stdout.hasPrefix("HTTP/1.1 503 "), "\(extra.stdout.prefix(200))")
        #expect(extra.stdout.contains("too many connections from uid 65534"), "\(extra.stdout.prefix(300))")
    }
}
