import BatonCore
import Foundation
import Testing

/// Artifacts on the dashboard over HTTP: listed with the run, downloaded as attachments (3 MiB:
/// several pieces from batond, several slices to the page), their bytes' SHA-256 the one listed.
@Suite("End to end: a run's artifacts on the dashboard over HTTP", .offPool)
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
        // Every download is bytes to save, never a same-origin script or page: the listing keeps the type.
        #expect(json.field("Content-Type") == "application/octet-stream")
        #expect(json.field("X-Content-Type-Options") == "nosniff")
        #expect(list?.files.last?.type == "application/json")

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

extension DashboardArtifactTests {
    @Test("downloads are admitted as raw output's are: with two held by readers that stopped reading, a third gets 503; one closed frees its slot")
    func admitted() throws {
        let daemon = try Daemon(config: #"""
            { requireUser: false, actions: { make: { exec: ["sh", "-c", "head -c 25165824 /dev/zero > \"$BATON_ARTIFACTS/big\""],
                artifacts: { keep: "64MiB" } } } }
            """#)
        defer { daemon.stop() }
        #expect(try daemon.baton("run", "make").code == 0)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        let session = try dashboard.authorization()
        let request = "GET /api/runs/1/artifacts/big HTTP/1.1\r\nHost: 127.0.0.1:\(dashboard.port)\r\n" + session.map { "\($0.key): \($0.value)\r\n" }.joined() + "\r\n"
        let held = try (0..<2).map { _ in
            let probe = try HTTPProbe(port: dashboard.port)
            probe.send(request)
            var first = [UInt8](repeating: 0, count: 12)
            #expect(recv(probe.fd, &first, 12, Int32(MSG_WAITALL)) == 12 && String(decoding: first, as: UTF8.self) == "HTTP/1.1 200", "\(String(decoding: first, as: UTF8.self))")
            return probe
        }
        let third = try HTTPProbe.request(port: dashboard.port, "GET", "/api/runs/1/artifacts/big", fields: session)
        #expect(third.status == 503, "\(third.status) \(third.body.prefix(200))")
        shutdown(held[0].fd, Int32(SHUT_RDWR))
        let again = try Eventually.value("the artifact served again once a download slot is free", within: 30, {
            try HTTPProbe.request(port: dashboard.port, "GET", "/api/runs/1/artifacts/big", fields: session)
        }) { $0.status != 503 }
        #expect(again.status == 200 && again.bytes.count == 25_165_824, "\(again.status), \(again.bytes.count) bytes (the probe stops reading after 15 s)")
        withExtendedLifetime(held) {}
    }
}

/// The run's page in a real browser: its artifacts listed with their digests, one downloaded.
@Suite("End to end: a run's artifacts in a browser", .serialized, .enabled(if: WebDriver.available, "needs chromium and chromium-driver"), .offPool)
struct DashboardArtifactBrowserTests {
    @Test("an ended run's page lists its files and notices; a click downloads one with the session")
    func listedAndDownloaded() async throws {
        let daemon = try Daemon(config: #"""
            { requireUser: false, actions: { make: { exec: ["sh", "-c",
                "printf 'hello' > \"$BATON_ARTIFACTS/a.txt\"; head -c 70000 /dev/zero > \"$BATON_ARTIFACTS/z.bin\"; ln -s /etc/passwd \"$BATON_ARTIFACTS/l\""],
                artifacts: { keep: "1MiB" } } } }
            """#)
        defer { daemon.stop() }
        #expect(try daemon.baton("run", "make").code == 0)
        let dashboard = try DashboardProcess(socket: daemon.socket)
        defer { dashboard.stop() }
        try await DashboardOutputBrowserTests.runPage(dashboard, 1) { browser in
            #expect(try browser.wait(until: "document.querySelectorAll('#artifacts li').length === 3"))
            let items = try browser.script("return [...document.querySelectorAll('#artifacts li')].map((li) => li.textContent);") as? [String] ?? []
            #expect(items.count == 3 && items[0].hasPrefix("a.txt · 5 B · sha256 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"), "\(items)")
            #expect(items.count == 3 && items[1].hasPrefix("z.bin · 68.4 KiB"), "\(items)")
            #expect(items.last == "l: a symlink, not followed")
            try browser.script("document.querySelectorAll('#artifacts a')[1].click();")
            #expect(try browser.wait(until: "document.querySelector('#artifacts-note').textContent.startsWith('downloaded z.bin')"))
            #expect(try browser.text("#artifacts-note") == "downloaded z.bin: 70000 bytes")
        }
    }
}
