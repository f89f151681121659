// libFuzzer target: the conductor's pure state driven by the fuzzer's bytes. Each byte is one
// choice of the random walk in Tests/BatonCoreTests/ConductorWalk.swift (which event happens
// next, to which run, with what outcome); every invariant is checked after every step, and a
// violation is a crash with the walk's story.
@testable import BatonCore
@testable import BatonEngine

struct ByteChoices: ConductorWalk.Choices {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    mutating func next(_ n: Int) -> Int? {
        guard index < bytes.count, n > 0 else { return nil }
        defer { index += 1 }
        return Int(bytes[index]) % n
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConductor(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 1 else { return 0 }
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var walk = ConductorWalk(maxConcurrentRuns: 1 + Int(bytes[0] % 3), seed: UInt64(bytes[0]))
    var choices = ByteChoices(bytes: UnsafeBufferPointer(rebasing: bytes[1...]))
    while walk.step(&choices) {}
    walk.drain()
    precondition(walk.violations.isEmpty, "\(walk.violations)")
    return 0
}
