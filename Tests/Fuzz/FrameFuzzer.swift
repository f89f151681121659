// libFuzzer target: the socket's frame splitter. Any bytes, fed in any chunking, must give
// frames of at most the limit and never crash; feeding the same bytes at once or in chunks (of a
// size the first byte picks) gives the same frames.
import BatonIPC

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFrames(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var whole = FrameSplitter(limit: 64)
    let all = whole.feed(bytes)
    var split = FrameSplitter(limit: 64)
    var pieces: [FrameSplitter.Frame] = []
    let chunk = size > 0 ? Int(data[0] % 7) + 1 : 1
    var start = 0
    while start < size {
        let end = min(start + chunk, size)
        pieces += split.feed(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
        start = end
    }
    precondition(all == pieces, "chunking changed the frames")
    for case let .line(line) in all {
        precondition(line.count <= 64, "a frame over the limit")
        precondition(!line.contains(10), "a frame with a newline")
    }
    precondition(whole.buffered <= 64 + 1 && split.buffered <= 64 + 1, "buffered more than the limit")
    return 0
}
