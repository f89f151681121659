import BatonCore
import FoundationEssentials

/// A run's output as the page's event stream carries it: an `output` event per chunk, whose id is
/// the position just past its last byte, so that a page which reconnects with it as
/// `Last-Event-ID` resumes exactly there (no byte twice, none lost); then `end` once the run has
/// ended and all it kept was sent, or `refused` (batond's word) or `offline` (reconnect).
public enum OutputEvents {
    /// The position a page resumes from: its `Last-Event-ID` as decimal digits, 0 without one;
    /// nil for anything else.
    public static func resumePosition(_ lastEventID: String?) -> Int64? {
        guard let text = lastEventID else { return 0 }
        guard !text.isEmpty, text.count <= 18, text.allSatisfy(\.isASCIIDigit) else { return nil }
        return Int64(text)
    }

    /// One chunk: where it starts, its stream, its bytes in base64 (any bytes, exactly).
    public static func chunk(_ chunk: OutputChunk) -> String {
        var json = JSONWriter()
        json.beginObject()
        json.field("start", chunk.start)
        json.field("stream", chunk.stream.rawValue)
        json.field("data", Data(chunk.bytes).base64EncodedString())
        json.endObject()
        return SSE.event("output", data: json.text, id: String(chunk.end))
    }

    /// The run ended and every byte it kept was sent: its phase, where the output ends, and how
    /// many bytes the history dropped (past the action's `output.keep`).
    public static func end(phase: Phase?, position: Int64?, dropped: Int64?) -> String {
        var json = JSONWriter()
        json.beginObject()
        json.field("phase", phase?.rawValue)
        json.field("outputEnd", position)
        json.field("outputDropped", dropped)
        json.endObject()
        return SSE.event("end", data: json.text)
    }

    /// Batond refused (no such run, not allowed to read it): the page stops.
    public static func refused(_ message: String) -> String { SSE.event("refused", data: DashboardServer.message(message)) }

    /// Batond could not be asked, or dropped the follow: the page reconnects.
    public static func offline(_ message: String) -> String { SSE.event("offline", data: DashboardServer.message(message)) }
}
