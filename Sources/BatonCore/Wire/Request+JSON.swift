import FoundationEssentials

extension Request {
    /// The request as one line of JSON, without its newline, as `JSONEncoder` writes it (same
    /// keys; nil fields left out). Written by hand but for a history `filter`, which goes through
    /// `JSONEncoder`: a one-shot `baton status` spent more instructions encoding its request with
    /// it than batond spends answering.
    public func jsonLine() -> [UInt8]? {
        if filter != nil { return try? Array(Self.encoder.encode(self)) }
        var json = JSONWriter()
        json.beginObject()
        if let id {
            json.key("id")
            switch id {
            case let .number(number): json.int(number)
            case let .text(text): json.string(text)
            }
        }
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
        json.endObject()
        return json.bytes
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return encoder
    }()
}
