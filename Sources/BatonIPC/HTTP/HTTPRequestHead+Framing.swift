extension HTTPRequestHead {
    /// Why the bytes so far hold a line end other than CRLF (RFC 9112 §2.2: a recipient may take a
    /// bare LF, and must refuse or replace a bare CR); nil when they hold none. A CR at the very end
    /// may yet be followed by its LF.
    static func bareLineEnd(_ bytes: ArraySlice<UInt8>) -> String? {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            switch bytes[index] {
            case 10 where index == bytes.startIndex || bytes[index - 1] != 13:
                return "a line ends in a bare LF: HTTP/1.1 lines end in CRLF"
            case 13 where index + 1 < bytes.endIndex && bytes[index + 1] != 10:
                return "a bare CR: HTTP/1.1 lines end in CRLF, and a CR is nowhere else"
            default: break
            }
            index += 1
        }
        return nil
    }

    /// Why the fields leave the request's target or framing in doubt (RFC 9112): more than one
    /// Host (§3.2), more than one Content-Length or one that is not a number (§6.3: a list of
    /// equal values may be taken, or refused, as here), or Content-Length beside Transfer-Encoding
    /// (§6.1: the way a request is smuggled past a proxy that reads the other). Each is a 400.
    static func framingProblem(_ fields: [Field]) -> String? {
        if fields.count(where: { $0.name == "host" }) > 1 { return "more than one Host field" }
        let lengths = fields.filter { $0.name == "content-length" }
        if lengths.count > 1 { return "more than one Content-Length field" }
        if let length = lengths.first?.value, length.isEmpty || !length.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) {
            return "Content-Length is not a number: \(length.isEmpty ? "(empty)" : length)"
        }
        if !lengths.isEmpty, fields.contains(where: { $0.name == "transfer-encoding" }) {
            return "both Content-Length and Transfer-Encoding: send one"
        }
        return nil
    }
}
