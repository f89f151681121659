// libFuzzer target: param patterns and values. The first byte says how long the pattern is; the
// rest is the value. Any pattern compiles or is refused with an error; a compiled one matches any
// value with work at most (length + 2) × program size: no input makes matching blow up.
@testable import BatonCore
@testable import BatonEngine

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPatterns(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let split = min(Int(bytes[0]), size - 1) + 1
    let source = String(decoding: bytes[1..<split], as: UTF8.self)
    let value = String(decoding: bytes[split...], as: UTF8.self)
    guard let pattern = try? ParamPattern(source) else { return 0 }
    let visited = pattern.statesVisited(value)
    let bound = (value.unicodeScalars.count + 2) * pattern.programSize
    precondition(visited <= bound, "\(source) on \(value.unicodeScalars.count) scalars visited \(visited) > \(bound)")
    _ = pattern.matches(value)
    return 0
}
