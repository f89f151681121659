import BatonEngine
import FoundationEssentials

extension Request {
    /// The request as one line of JSON, without its newline, as `JSONEncoder` writes it (same
    /// keys; nil fields left out). Written by hand but for a history `filter`, which goes through
    /// `JSONEncoder`: a one-shot `baton status` spent more instructions encoding its request with
    /// it than batond spends answering.
    public func jsonLine() -> [UInt8]? {
        if filter != nil { return try? Array(JSONWriter.encoder.encode(self)) }
        var json = JSONWriter()
        json.beginObject()
        json.field("id", id)
        json.field("op", op.rawValue)
        json.field("action", action)
        if let params { json.key("params"); json.stringMap(params) }
        json.field("policy", policy?.rawValue)
        json.field("detach", detach)
        json.field("force", force)
        json.field("slot", slot)
        json.field("dryRun", dryRun)
        json.field("run", run)
        json.field("key", key)
        json.field("progress", progress)
        json.field("from", from)
        json.field("follow", follow)
        json.field("text", text)
        json.field("reason", reason)
        json.field("duration", duration)
        json.field("hold", hold)
        json.field("as", actingAs)
        json.field("asGroup", asGroup)
        json.field("name", name)
        if let after {
            json.key("after")
            json.beginObject()
            json.field("at", after.at.rawValue)
            json.field("run", after.run)
            json.field("seq", Int64(after.seq))
            json.endObject()
        }
        json.endObject()
        return json.take()
    }
}
