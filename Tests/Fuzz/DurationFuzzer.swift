// libFuzzer target: durations as people write them (`500ms`, `1h30m`, `90d`). Any text parses to
// a non-negative bounded duration or to nil; a parsed duration formats and never crashes.
import BatonCore
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDurations(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if let duration = DurationText.parse(text) {
        precondition(duration >= .zero, "a negative duration from \(text)")
        precondition(duration <= .seconds(100 * 365 * 86_400), "an unbounded duration from \(text)")
        _ = DurationText.format(duration)
    }
    // Any number of microseconds formats.
    if size >= 8 {
        let micros = UnsafeRawPointer(data).loadUnaligned(as: Int64.self)
        _ = DurationText.format(.microseconds(micros))
    }
    return 0
}
