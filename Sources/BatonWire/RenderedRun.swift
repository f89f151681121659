import BatonEngine

/// A run's snapshot with its JSON, written once: the lines that carry the same snapshot (a
/// trigger's answer, a wait's events and answer, each watcher's update) reuse the bytes instead
/// of writing the snapshot again (issue 39).
public struct RenderedRun: Sendable {
    /// The snapshot the bytes are of.
    public let run: RunSnapshot
    /// `run` as `RunSnapshot.write(to:)` writes it.
    public let json: [UInt8]

    public init(_ run: RunSnapshot) {
        var writer = JSONWriter(capacity: 512)
        run.write(to: &writer)
        self.run = run
        json = writer.take()
    }

    /// Whether the bytes are `other`'s: its fields are the rendered ones, shared (never
    /// compared: `RunSnapshot.isTriviallyIdentical(to:)`).
    public func isRendering(of other: RunSnapshot) -> Bool { run.isTriviallyIdentical(to: other) }
}

extension Response {
    /// `Response.update(id, update).jsonLine()`, written without making the response, with the
    /// run's bytes from `rendered` where they are its snapshot's.
    public static func updateLine(_ id: RequestID?, _ update: RunUpdate, rendered: RenderedRun? = nil) -> [UInt8] {
        var json = JSONWriter(capacity: 768)
        json.beginObject()
        json.field("id", id)
        json.field("event", "update")
        json.key("run")
        json.run(update.run, rendered)
        if let transition = update.transition { json.key("transition"); transition.write(to: &json) }
        json.endObject()
        return json.take()
    }
}

extension JSONWriter {
    /// The run's snapshot: `rendered`'s bytes when they are its, else written now.
    mutating func run(_ run: RunSnapshot, _ rendered: RenderedRun?) {
        if let rendered, rendered.isRendering(of: run) { raw(rendered.json) } else { run.write(to: &self) }
    }
}
