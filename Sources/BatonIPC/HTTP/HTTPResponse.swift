/// An answer of the small HTTP server: status, a few header fields, a body; always closes.
public struct HTTPResponse: Equatable, Sendable {
    public var status: Int
    public var contentType: String
    public var extraFields: [HTTPRequestHead.Field]
    public var body: [UInt8]

    public init(status: Int, contentType: String = "text/plain; charset=utf-8", extraFields: [HTTPRequestHead.Field] = [], body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.extraFields = extraFields
        self.body = body
    }

    /// A short plain-text answer for a refusal: the status line's reason, and why.
    public static func refusal(_ status: Int, _ why: String, extraFields: [HTTPRequestHead.Field] = []) -> HTTPResponse {
        HTTPResponse(status: status, extraFields: extraFields, body: Array("\(status) \(reason(status)): \(why)\n".utf8))
    }

    /// The bytes on the wire; HEAD gets the head alone (with the body's length).
    public func bytes(headOnly: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        head += "Connection: close\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
        for field in extraFields { head += "\(field.name): \(field.value)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + (headOnly ? [] : body)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 202: "Accepted"
        case 303: "See Other"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 421: "Misdirected Request"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
