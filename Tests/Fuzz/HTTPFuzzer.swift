// libFuzzer target: the HTTP request head parser of the metrics listener. Any bytes must parse,
// ask for more, or be refused with a 4xx/5xx status, never crash; a parsed head never claims
// more bytes than it was given, and its names and values hold no CR, LF or NUL.
import BatonIPC

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    switch HTTPRequestHead.parse(bytes, limit: 2_048, maxFields: 16) {
    case .incomplete:
        precondition(bytes.count < 2_048, "an input past the limit is never incomplete")
    case let .refused(status, reason):
        precondition((400..<600).contains(status) && !reason.isEmpty, "a refusal carries a status and a reason")
    case let .head(head, length):
        precondition(length <= bytes.count && length <= 2_048 + 4, "the head ends within the input and the limit")
        precondition(head.fields.count <= 16)
        precondition(head.path.hasPrefix("/"))
        for text in [head.method, head.path, head.version] + head.fields.flatMap({ [$0.name, $0.value] }) {
            precondition(!text.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 }), "no CR, LF or NUL inside a head")
        }
    }
    return 0
}
