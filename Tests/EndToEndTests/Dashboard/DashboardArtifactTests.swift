import BatonCore
import Foundation
import Testing

/// Artifacts on the dashboard over HTTP: listed with the run, downloaded as attachments (3 MiB:
/// several pieces from batond, several slices to the page), their bytes' SHA-256 the one listed.
@Suite("End to end: a run's artifacts on the dashboard over HTTP")
struct DashboardArtifactTests {
    @Test("listed and downloaded with the session: the bytes, their type, as an attachment, the listed SHA-256; refusals without")
    func downloaded() throws {
        let daemon = try Daemon(config: #"""
            { requireUser: false, actions: { make: { exec: ["sh", "-c",
                "head -c 3200000 /dev/urandom > \"$BATON_ARTIFACTS/big blob.bin\"; mkdir \"$BATON_ARTIFACTS/d\"; echo '{\"a\":1}' > \"$BATON_ARTIFACTS/d/r.json\""],
                artifacts: { keep: "8MiB" } } } }
            """#)
        defer { daemon.stop() }
        #expect(try daemon.baton("run", "make").code == 0)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let session = try dashboard.authorization()

        let listed = try HTTPProbe.request(port: dashboard.port, "GET", "/api/runs/1/artifacts", fields: session)
        #expect(listed.status == 200, "\(listed.body)")
        let list = try JSONDecoder().decode(Response.self, from: Data(listed.bytes)).artifacts
        #expect(list?.files.map(\.name) == ["big blob.bin", "d/r.json"])

        let big = try HTTPProbe.request(port: dashboard.port, "GET", "/api/runs/1/artifacts/big%20blob.bin", fields: session)
        #expect(big.status == 200)
        #expect(big.bytes.count == 3_200_000)
        let file = daemon.directory + "/downloaded"
        try Data(big.bytes).write(to: URL(fileURLWithPath: file))
        let sum = String(try execute("/usr/bin/sha256sum", [file]).stdout.prefix(64))
        #expect(sum == list?.files.first?.sha256)
        #expect(big.field("Content-Type") == "application/octet-stream")
        #expect(big.field("Content-Disposition") == #"attachment; filename="big blob.bin"; filename*=UTF-8''big%20blob.bin"#)
        #expect(big.field("X-Content-Type-Options") == "nosniff" && big.field("Content-Security-Policy")?.hasPrefix("default-src 'none'") == true)

        let json = try HTTPProbe.request(port: dashboard.port, "GET", "/api/runs/1/artifacts/d%2Fr.json", fields: session)
        #expect(json.status == 200 && json.body == "{\"a\":1}\n", "\(json.body)")
        #expect(json.field("Content-Type") == "application/json")

        let cases: [(String, [String: String], Int)] = [
            ("/api/runs/1/artifacts", [:], 401),
            ("/api/runs/1/artifacts/d%2Fr.json", [:], 401),
            ("/api/runs/1/artifacts/d%2Fr.json", ["Authorization": "Bearer wrong"], 401),
            ("/api/runs/1/artifacts/nope", session, 400),
            ("/api/runs/999/artifacts/d%2Fr.json", session, 404),
            ("/api/runs/999/artifacts", session, 404),
        ]
        for (path, fields, status) in cases {
            let answer = try HTTPProbe.request(port: dashboard.port, "GET", path, fields: fields)
            #expect(answer.status == status, "\(path) \(fields) → \(answer.status) \(answer.body)")
        }
    }
}
