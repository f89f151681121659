import BatonCore
import BatonIPC
import FoundationEssentials

extension DashboardServer {
    /// What the owner is told of on the dashboard's terminal.
    public enum SignIn: Sendable {
        /// A page traded `code` for a session.
        case signedIn(code: String)
        /// `code` came a second time within its life; the session of its first use is signed out.
        case reused(code: String)
    }

    /// A new one-time code, good for one sign-in within `Sessions.codeLifetime`.
    public func issueCode() -> String {
        let code = Self.randomText()
        onLoopAndWait { [sessions] in sessions.access { $0.issue(code: code, now: .now) } }
        return code
    }

    /// The address that signs a page in with `code`, at the gate's address (for a wildcard listen
    /// address one of the machine's own: `http://0.0.0.0:…` is no page's origin the gate knows). The
    /// code is in the fragment, which a browser never sends to a server nor in a `Referer`; the
    /// page removes it from the address bar.
    public func address(code: String) -> String { "http://\(gate.address)/#code=\(code)" }

    struct SignInBody: Decodable {
        var code: String
    }

    /// `POST /api/session {"code": …}`: the code's session, once; every refusal is a 401 that
    /// says what to do, and none says whether some other code would have worked.
    func signIn(body: [UInt8]) -> HTTPResponse {
        guard let given = try? JSONDecoder().decode(SignInBody.self, from: Data(body)) else {
            return sessionAnswer(400, error: #"expected a JSON body like {"code": "…"}"#)
        }
        let token = Self.randomText()
        let outcome = sessions.access { $0.redeem(code: given.code, token: token, now: .now) }
        switch outcome {
        case let .session(token):
            onSignIn(.signedIn(code: given.code))
            var json = JSONWriter()
            json.beginObject()
            json.field("ok", true)
            json.field("session", token)
            json.endObject()
            return HTTPResponse(status: 200, contentType: "application/json", extraFields: Assets.securityFields, body: Array(json.text.utf8))
        case .reused:
            onSignIn(.reused(code: given.code))
            return sessionAnswer(401, error: "this sign-in code was used already, so the page it signed in is signed out too: press Enter where `baton dashboard` runs for a new address")
        case .expired, .unknown:
            return sessionAnswer(401, error: "this sign-in code is not valid (each is good once, for 60 s): press Enter where `baton dashboard` runs for a new address")
        }
    }

    private func sessionAnswer(_ status: Int, error message: String) -> HTTPResponse {
        let body = Response.failure(WireError(code: status == 400 ? .badRequest : .forbidden, message: message)).jsonLine()
        return HTTPResponse(status: status, contentType: "application/json", extraFields: Assets.securityFields, body: body)
    }

    /// 32 random bytes as hex, from the kernel's generator.
    static func randomText() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let hex = String(generator.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}
