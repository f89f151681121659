import BatonCore
import BatonIPC

/// An answer the hook listener gives before any run is involved: a status and a short JSON body.
/// Refusals before a request is authenticated say nothing more than their status: never which
/// part of a signature failed, nor what was expected.
public struct HookAnswer: Sendable, Equatable {
    public var status: Int
    public var message: String
    public var allow: String?
    /// Seconds before the hook takes another request (429).
    public var retryAfter: Int?

    public init(status: Int, message: String, allow: String? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.message = message
        self.allow = allow
        self.retryAfter = retryAfter
    }

    public static let unauthorized = HookAnswer(status: 401, message: "unauthorized")
    public static let notFound = HookAnswer(status: 404, message: "not found")
    public static let tooLarge = HookAnswer(status: 413, message: "the body is too large")
    public static let lengthRequired = HookAnswer(status: 411, message: "send the body with a Content-Length")

    /// A wrong method for a path that takes `allow`.
    public static func methodNotAllowed(_ allow: String) -> HookAnswer {
        HookAnswer(status: 405, message: "method not allowed", allow: allow)
    }

    /// The HTTP answer: `{"error": message}`, with Allow or Retry-After where they apply.
    public var response: HTTPResponse {
        var fields: [HTTPRequestHead.Field] = []
        if let allow { fields.append(.init(name: "Allow", value: allow)) }
        if let retryAfter { fields.append(.init(name: "Retry-After", value: String(retryAfter))) }
        if status == 401 { fields.append(.init(name: "WWW-Authenticate", value: "Signature")) }
        return HTTPResponse(status: status, contentType: "application/json", extraFields: fields,
                            body: Array(JSONText.object(["error": message]).utf8) + [10])
    }
}
