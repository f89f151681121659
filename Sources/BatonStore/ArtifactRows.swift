import BatonCore
import FoundationEssentials

/// The artifact rows of one run, written in the writer's transactions.
enum ArtifactRows {
    /// A file whose chunks are all written: its row, size and digest.
    struct Kept: Sendable {
        var id: Int64
        var size: Int64
        var sha256: String
    }

    /// The unpublished rows of an attempt's files (an earlier try's of the same attempt removed first); their ids, in order.
    static func begin(_ files: [ArtifactScan.File], run: Int64, attempt: Int, at: Timestamp, on connection: Connection) throws -> [Int64] {
        try connection.withStatement("DELETE FROM artifacts WHERE run_id = ? AND attempt = ? AND kept = 0") {
            try $0.run([.integer(run), .integer(Int64(attempt))])
        }
        var ids: [Int64] = []
        for file in files {
            try connection.withStatement("INSERT INTO artifacts (run_id, attempt, name, size, sha256, type, at) VALUES (?, ?, ?, 0, '', ?, ?)") {
                try $0.run([.integer(run), .integer(Int64(attempt)), .text(file.name), .text(ArtifactType.of(file.name)), .integer(at.rawValue)])
            }
            ids.append(try connection.scalar("SELECT last_insert_rowid()")?.int64 ?? 0)
        }
        return ids
    }

    /// Publishes the attempt's files in one transaction: every other row of the run goes (an
    /// earlier attempt's, a file not kept), the kept ones are read from now on, the notices replaced.
    static func publish(_ kept: [Kept], notices: [String], run: Int64, attempt: Int, on connection: Connection) throws {
        try connection.withStatement("DELETE FROM artifacts WHERE run_id = ? AND (attempt <> ? OR kept = 1)") {
            try $0.run([.integer(run), .integer(Int64(attempt))])
        }
        for file in kept {
            try connection.withStatement("UPDATE artifacts SET kept = 1, size = ?, sha256 = ? WHERE id = ?") {
                try $0.run([.integer(file.size), .text(file.sha256), .integer(file.id)])
            }
        }
        // The files that could not be read, whose rows (and chunks) were begun.
        try connection.withStatement("DELETE FROM artifacts WHERE run_id = ? AND kept = 0") { try $0.run([.integer(run)]) }
        try connection.withStatement("DELETE FROM artifact_notices WHERE run_id = ?") { try $0.run([.integer(run)]) }
        for (seq, text) in notices.enumerated() {
            try connection.withStatement("INSERT INTO artifact_notices (run_id, attempt, seq, text) VALUES (?, ?, ?, ?)") {
                try $0.run([.integer(run), .integer(Int64(attempt)), .integer(Int64(seq)), .text(text)])
            }
        }
    }
}

extension History {
    /// The files a run kept, by name, and the notices about the others.
    public func artifacts(of run: Int64) throws -> ArtifactList {
        var list = ArtifactList(run: run)
        try connection.withStatement("SELECT name, size, sha256, type, attempt FROM artifacts WHERE run_id = ? AND kept = 1 ORDER BY name") { s in
            try s.bind([.integer(run)])
            while try s.step() { list.files.append(Self.artifactInfo(s)) }
        }
        try connection.withStatement("SELECT text FROM artifact_notices WHERE run_id = ? ORDER BY attempt, seq") { s in
            try s.bind([.integer(run)])
            while try s.step() { list.notices.append(s.string(0) ?? "") }
        }
        return list
    }

    /// Up to `maxBytes` of the file `name` of `run` from `offset`; nil when the run kept no such file.
    public func artifact(of run: Int64, named name: String, from offset: Int64, maxBytes: Int) throws -> ArtifactPiece? {
        let found = try connection.withStatement(
            "SELECT name, size, sha256, type, attempt, id FROM artifacts WHERE run_id = ? AND name = ? AND kept = 1") { s in
            try s.bind([.integer(run), .text(name)])
            return try s.step() ? (Self.artifactInfo(s), s.int64(5) ?? 0) : nil
        }
        guard let (info, id) = found else { return nil }
        let from = min(max(offset, 0), info.size)
        var bytes: [UInt8] = []
        try connection.withStatement(Self.pieceChunksSQL) { s in
            try s.bind([.integer(id), .integer(id), .integer(from)])
            while bytes.count < max(maxBytes, 1), try s.step() {
                let start = s.int64(0) ?? 0
                guard case let .blob(chunk) = s.value(1) else { continue }
                let skip = Int(max(from - start, 0))
                if skip < chunk.count { bytes += chunk[skip..<min(chunk.count, skip + max(maxBytes, 1) - bytes.count)] }
            }
        }
        let end = from + Int64(bytes.count)
        return ArtifactPiece(artifact: info, from: from, bytes: bytes, next: end < info.size ? end : nil)
    }

    /// A piece's chunks (`?` the file's row twice, then the piece's offset): from the one that holds
    /// the offset on, both found in the chunks' key (never a scan from the file's first chunk);
    /// the caller stops stepping once it has the piece.
    static let pieceChunksSQL = """
        SELECT start, bytes FROM artifact_chunks WHERE artifact_id = ?
        AND start >= coalesce((SELECT max(start) FROM artifact_chunks WHERE artifact_id = ? AND start <= ?), 0) ORDER BY start
        """

    private static func artifactInfo(_ s: Statement) -> ArtifactInfo {
        ArtifactInfo(name: s.string(0) ?? "", size: s.int64(1) ?? 0, sha256: s.string(2) ?? "", type: s.string(3) ?? "",
                     attempt: Int(s.int64(4) ?? 0))
    }
}
