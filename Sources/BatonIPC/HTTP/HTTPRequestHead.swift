/// The head of an HTTP/1.x request (request line and header fields), parsed strictly: CRLF line
/// ends (a bare LF or CR refused as soon as it comes), token methods and field names, origin-form
/// targets, no folded lines, one Host, at most one Content-Length and that a number (never beside
/// Transfer-Encoding), bounded size and field count. What it refuses carries the status to answer with.
public struct HTTPRequestHead: Equatable, Sendable {
    public var method: String
    /// The path, without the query.
    public var path: String
    public var query: String?
    /// "HTTP/1.0" or "HTTP/1.1".
    public var version: String
    /// Field names lowercased, values with surrounding spaces trimmed, in order.
    public var fields: [Field]

    public struct Field: Equatable, Sendable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public enum Parse: Equatable, Sendable {
        /// More bytes are needed.
        case incomplete
        /// The head, and how many bytes it took (a body, if any, follows).
        case head(HTTPRequestHead, length: Int)
        case refused(status: Int, reason: String)
    }

    public func field(_ name: String) -> String? { fields.first { $0.name == name }?.value }

    /// Parses the head at the start of `bytes`: at most `limit` bytes and `maxFields` fields.
    public static func parse(_ bytes: [UInt8], limit: Int = 8_192, maxFields: Int = 64) -> Parse {
        let end = headEnd(bytes, within: limit)
        // Before waiting for more: LF-only lines never make the CRLF CRLF that ends a head.
        if let reason = bareLineEnd(bytes[..<min(end.map { $0 + 4 } ?? bytes.count, limit)]) {
            return .refused(status: 400, reason: reason)
        }
        guard let end else {
            return bytes.count >= limit ? .refused(status: 431, reason: "request head larger than \(limit) bytes") : .incomplete
        }
        var lines = split(bytes[..<end])
        guard !lines.isEmpty else { return .refused(status: 400, reason: "empty request") }
        let requestLine = lines.removeFirst()
        guard lines.count <= maxFields else { return .refused(status: 431, reason: "more than \(maxFields) header fields") }
        var head: HTTPRequestHead
        switch Self.requestLine(requestLine) {
        case let .success(parsed): head = parsed
        case let .failure(refusal): return .refused(status: refusal.status, reason: refusal.reason)
        }
        for line in lines {
            guard let field = Self.field(line) else { return .refused(status: 400, reason: "malformed header field") }
            head.fields.append(field)
        }
        if head.version == "HTTP/1.1" && head.field("host") == nil { return .refused(status: 400, reason: "missing Host") }
        if let reason = framingProblem(head.fields) { return .refused(status: 400, reason: reason) }
        return .head(head, length: end + 4)
    }

    struct Refusal: Error { var status: Int; var reason: String }

    /// The index of the CRLF CRLF that ends the head, if it is within `limit` bytes.
    static func headEnd(_ bytes: [UInt8], within limit: Int) -> Int? {
        let count = min(bytes.count, limit)
        guard count >= 4 else { return nil }
        for index in 0...(count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    /// Lines split at CRLF; nil entries for a bare CR or LF, which `field` then refuses.
    static func split(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = bytes.startIndex, index = bytes.startIndex
        while index < bytes.endIndex {
            if bytes[index] == 13, index + 1 < bytes.endIndex, bytes[index + 1] == 10 {
                lines.append(bytes[start..<index])
                index += 2
                start = index
            } else {
                index += 1
            }
        }
        lines.append(bytes[start..<bytes.endIndex])
        return lines
    }

    static func requestLine(_ line: ArraySlice<UInt8>) -> Result<HTTPRequestHead, Refusal> {
        let parts = line.split(separator: 32, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isToken) else {
            return .failure(Refusal(status: 400, reason: "malformed request line"))
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            return .failure(Refusal(status: version.hasPrefix("HTTP/") ? 505 : 400, reason: "unsupported version"))
        }
        let target = parts[1]
        guard target.first == UInt8(ascii: "/"), target.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            return .failure(Refusal(status: 400, reason: "the target must be a path"))
        }
        let text = String(decoding: target, as: UTF8.self)
        let pieces = text.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        return .success(HTTPRequestHead(method: String(decoding: parts[0], as: UTF8.self), path: String(pieces[0]),
                                        query: pieces.count > 1 ? String(pieces[1]) : nil, version: version, fields: []))
    }

    static func field(_ line: ArraySlice<UInt8>) -> Field? {
        guard let colon = line.firstIndex(of: 58), colon > line.startIndex,
              line[..<colon].allSatisfy(isToken) else { return nil }
        let value = line[(colon + 1)...]
        // Visible characters, spaces and tabs only: no CR, LF or NUL inside a value.
        guard value.allSatisfy({ $0 == 9 || ($0 >= 32 && $0 != 127) }) else { return nil }
        let trimmed = value.drop { $0 == 32 || $0 == 9 }.reversed().drop { $0 == 32 || $0 == 9 }.reversed()
        return Field(name: String(decoding: line[..<colon], as: UTF8.self).lowercased(), value: String(decoding: trimmed, as: UTF8.self))
    }

    /// RFC 9110's tchar.
    static func isToken(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
