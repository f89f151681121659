@testable import baton
import BatonCore
import Testing

/// Which chunks `baton logs` prints: `--stream` and `--since`, as a table.
@Suite("baton logs: which chunks")
struct OutputSelectionTests {
    static func chunk(_ stream: StandardStream, at: Int64) -> OutputChunk {
        OutputChunk(start: 0, stream: stream, at: Timestamp(rawValue: at), bytes: [1])
    }

    @Test("a chunk is printed when its stream is asked for and it arrived at or after since", arguments: [
        (nil, nil, StandardStream.stdout, Int64(5), true),
        (StandardStream.stderr, nil, .stdout, 5, false),
        (.stderr, nil, .stderr, 5, true),
        (nil, 5, .stdout, 5, true),
        (nil, 6, .stdout, 5, false),
        (.stdout, 4, .stdout, 5, true),
        (.stdout, 4, .stderr, 5, false),
    ] as [(StandardStream?, Int64?, StandardStream, Int64, Bool)])
    func wants(_ stream: StandardStream?, _ since: Int64?, _ chunkStream: StandardStream, _ at: Int64, _ printed: Bool) {
        let selection = OutputSelection(stream: stream, since: since.map { Timestamp(rawValue: $0) })
        #expect(selection.wants(Self.chunk(chunkStream, at: at)) == printed)
    }
}
