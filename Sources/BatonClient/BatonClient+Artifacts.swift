import BatonCore

extension BatonQuery where Value == ArtifactList {
    /// The files a run kept (`artifacts`), by name, and the notices about those it did not keep.
    public static func artifacts(run: Int64) -> Self {
        Self(Request(op: .artifacts, run: run)) { $0.artifacts ?? ArtifactList(run: run) }
    }
}

extension BatonQuery where Value == ArtifactPiece {
    /// One piece (up to 1 MiB) of a run's artifact `name` from `from`; its `next` says where the next starts.
    public static func artifact(run: Int64, name: String, from: Int64 = 0) -> Self {
        Self(Request(op: .artifact, run: run, from: from, name: name)) { response in
            guard let piece = response.piece else { throw BatonClientError.internal("batond answered artifact without its bytes") }
            return piece
        }
    }
}

extension BatonClient {
    /// The files run `run` kept, with their sizes and SHA-256, and the notices about the others.
    public func artifacts(run: Int64) async throws -> ArtifactList {
        try await ask(.artifacts(run: run))
    }

    /// Reads the artifact `name` of `run` a piece at a time, handing each piece's bytes to `body`
    /// in order (never the whole file in memory); returns what `artifacts` says of the file. A piece
    /// of another file (a retry's, kept meanwhile) ends it: `unavailable`, before its bytes are handed on.
    @discardableResult
    public func artifact(run: Int64, name: String, _ body: ([UInt8]) throws -> Void) async throws -> ArtifactInfo {
        var from: Int64 = 0
        var earlier: ArtifactPiece?
        while true {
            let piece = try await ask(.artifact(run: run, name: name, from: from))
            if let earlier, !piece.follows(earlier, at: from) {
                throw BatonClientError.unavailable("artifact \(name) of run \(run) changed while read (another attempt's files were kept): read it again")
            }
            try body(piece.bytes)
            guard let next = piece.next, next > from else { return piece.artifact }
            from = next
            earlier = piece
        }
    }
}
