// libFuzzer target: the request decoder. Any bytes must decode to a Request or fail with an
// error, never crash; a decoded request encodes again, and decodes to the same encoding, and
// its bounds are checked (Request.validated) without a crash; the duplicate-key scan takes any bytes.
import BatonCore
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequests(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    // The duplicate-key scan batond runs on each decoded line: any bytes, never a crash.
    _ = DuplicateKeys.find(in: [UInt8](bytes))
    guard let request = try? JSONDecoder().decode(Request.self, from: bytes) else { return 0 }
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    guard let once = try? encoder.encode(request) else { preconditionFailure("a decoded request does not encode") }
    guard let again = try? JSONDecoder().decode(Request.self, from: once), let twice = try? encoder.encode(again) else {
        preconditionFailure("an encoded request does not decode")
    }
    precondition(once == twice, "encoding is not stable")
    // Within its bounds or refused, never a crash; a request within them stays as it is.
    if let valid = try? request.validated() {
        precondition((try? valid.validated())?.filter == valid.filter, "validating again changed the filter")
    }
    return 0
}
