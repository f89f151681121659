import BatonEngine
import FoundationEssentials

/// One file a run kept (`artifacts`): its path under `$BATON_ARTIFACTS`, size, SHA-256 and media type.
public struct ArtifactInfo: Codable, Sendable, Equatable {
    public var name: String
    public var size: Int64
    /// The SHA-256 of its bytes, lowercase hex.
    public var sha256: String
    /// A media type from the name's extension (`application/octet-stream` when unknown).
    public var type: String
    /// The attempt whose directory held it.
    public var attempt: Int

    public init(name: String, size: Int64, sha256: String, type: String, attempt: Int) {
        self.name = name
        self.size = size
        self.sha256 = sha256
        self.type = type
        self.attempt = attempt
    }
}

/// A run's artifacts (`artifacts` op): the files kept, by name, and what was said about the
/// others (over the bound, a symlink or device not followed, a failure to keep them).
public struct ArtifactList: Codable, Sendable, Equatable {
    public var run: Int64
    public var files: [ArtifactInfo]
    public var notices: [String]

    public init(run: Int64, files: [ArtifactInfo] = [], notices: [String] = []) {
        self.run = run
        self.files = files
        self.notices = notices
    }
}

/// One piece of an artifact's bytes (`artifact` op): up to `maxBytes` from `from`, and where the
/// next piece starts (nil: this one ends the file). A client asks piece after piece.
public struct ArtifactPiece: Codable, Sendable, Equatable {
    public var artifact: ArtifactInfo
    public var from: Int64
    public var bytes: [UInt8]
    public var next: Int64?

    /// The most bytes one piece carries (base64 in JSON: about 1.4 MiB a line).
    public static let maxBytes = 1 << 20

    public init(artifact: ArtifactInfo, from: Int64, bytes: [UInt8], next: Int64?) {
        self.artifact = artifact
        self.from = from
        self.bytes = bytes
        self.next = next
    }

    /// Whether this piece follows `earlier` at `next`: from there, and of the same file (its SHA-256
    /// and attempt: a retry's files kept meanwhile replace it). A reader ends with an error otherwise.
    public func follows(_ earlier: ArtifactPiece, at next: Int64) -> Bool {
        from == next && artifact.sha256 == earlier.artifact.sha256 && artifact.attempt == earlier.artifact.attempt
    }

    /// On the wire the bytes are `data`, in base64.
    enum CodingKeys: String, CodingKey { case artifact, from, data, next }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        artifact = try container.decode(ArtifactInfo.self, forKey: .artifact)
        from = try container.decode(Int64.self, forKey: .from)
        bytes = Array(try container.decode(Data.self, forKey: .data))
        next = try container.decodeIfPresent(Int64.self, forKey: .next)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(artifact, forKey: .artifact)
        try container.encode(from, forKey: .from)
        try container.encode(Data(bytes), forKey: .data)
        try container.encodeIfPresent(next, forKey: .next)
    }
}
