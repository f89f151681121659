// libFuzzer target: the CLI's --since/--until parser (`30m`, `today`, `2026-11-01T14:00`). Any
// text gives a time or a refusal that says why, never a crash.
import BatonCore
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTimes(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    do {
        _ = try TimeText.parse(text, now: Timestamp(rawValue: 1_795_000_000_000_000))
    } catch {
        precondition(!error.description.isEmpty, "a refusal says why")
    }
    return 0
}
