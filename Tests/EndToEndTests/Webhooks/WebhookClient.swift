import BatonHooks
import Foundation
import Testing

/// The real clients of the webhook tests: Python's urllib (signing with Python's own `hmac`)
/// and curl, against a batond whose config has `webhooks`.
enum WebhookClient {
    /// A push event as GitHub's webhook documentation shows one (shortened: the fields a hook
    /// reads, and enough around them to be the shape a forge sends).
    static let githubPush = #"""
    {"ref":"refs/heads/main","before":"6113728f27ae82c7b1a177c8d03f9e96e0adf246","after":"0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c","repository":{"id":186853002,"node_id":"MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=","name":"Hello-World","full_name":"Codertocat/Hello-World","private":false,"owner":{"name":"Codertocat","login":"Codertocat","id":21031067}},"pusher":{"name":"Codertocat","email":"21031067+Codertocat@users.noreply.github.com"},"sender":{"login":"Codertocat","id":21031067,"type":"User"},"created":false,"deleted":false,"forced":false,"base_ref":null,"compare":"https://github.com/Codertocat/Hello-World/compare/6113728f27ae...0d1a26e67d8f","commits":[{"id":"0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c","message":"Update README.md","timestamp":"2019-05-15T15:20:30-04:00","author":{"name":"Codertocat","email":"21031067+Codertocat@users.noreply.github.com","username":"Codertocat"}}],"head_commit":{"id":"0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c","message":"Update README.md"}}
    """#

    /// Sends a POST with Python's urllib: `scheme` github signs `X-Hub-Signature-256` (and the
    /// legacy SHA-1 one, as GitHub does), `hmac-sha256` signs `X-Baton-Signature` at now + `skew`
    /// seconds, `gitlab` sends the token. Returns the status and the body.
    static let python = #"""
    import hashlib, hmac, json, sys, time, urllib.error, urllib.request
    url, scheme, secret_file, body_file, skew = sys.argv[1:6]
    secret = open(secret_file, "rb").read().rstrip(b"\r\n")
    body = open(body_file, "rb").read()
    headers = {"Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/044aadd"}
    for pair in sys.argv[6:]:
        name, value = pair.split("=", 1)
        headers[name] = value
    if scheme == "github":
        headers["X-Hub-Signature-256"] = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        headers["X-Hub-Signature"] = "sha1=" + hmac.new(secret, body, hashlib.sha1).hexdigest()
    elif scheme == "hmac-sha256":
        t = str(int(time.time()) + int(skew))
        headers["X-Baton-Signature"] = "t=" + t + ",v1=" + hmac.new(secret, t.encode() + b"." + body, hashlib.sha256).hexdigest()
    elif scheme == "gitlab":
        headers["X-Gitlab-Token"] = secret.decode()
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        response = urllib.request.urlopen(request, timeout=60)
        status, text = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    print(status)
    sys.stdout.write(text.decode())
    """#

    struct Answer {
        var status: Int
        var body: String
        /// The body's JSON object.
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:] }
        var run: Int? { json["run"] as? Int }
    }

    /// A POST through urllib.
    static func post(_ url: String, scheme: String, secret: String, body: String, skew: Int = 0, headers: [String: String] = [:],
                     in directory: String) throws -> Answer {
        let script = directory + "/hook.py", bodyFile = directory + "/body-\(UUID().uuidString).json"
        try python.write(toFile: script, atomically: true, encoding: .utf8)
        try body.write(toFile: bodyFile, atomically: true, encoding: .utf8)
        let result = try execute("/usr/bin/python3", [script, url, scheme, secret, bodyFile, String(skew)] + headers.map { "\($0.key)=\($0.value)" })
        #expect(result.code == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        return Answer(status: Int(lines.first ?? "") ?? 0, body: lines.count > 1 ? String(lines[1]) : "")
    }

    /// A request through curl: its status (`-w %{http_code}`) and body.
    static func curl(_ arguments: [String]) throws -> Answer {
        let result = try execute("/usr/bin/curl", ["-sS", "-w", "\n%{http_code}", "--max-time", "60"] + arguments)
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return Answer(status: Int(lines.last ?? "") ?? 0, body: lines.dropLast().joined(separator: "\n"))
    }

    /// `sha256=HEX` of `body` under the secret in `file`, for curl.
    static func githubSignature(_ body: String, secretFile file: String) throws -> String {
        let secret = Secret(fileContent: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
        return "sha256=" + HMAC.hex(HMAC.sha256(key: secret.bytes, message: Array(body.utf8)))
    }

    /// The listener's port, from batond's log line.
    static func port(of daemon: Daemon) throws -> UInt16 {
        try daemon.waitForLog("/hooks/\n")
        let line = daemon.stderr.split(separator: "\n").first { $0.contains("webhooks: ") && $0.hasSuffix("/hooks/") } ?? ""
        let address = line.split(separator: "http://").last ?? ""
        return try #require(UInt16(address.split(separator: ":").last?.split(separator: "/").first ?? ""))
    }
}
