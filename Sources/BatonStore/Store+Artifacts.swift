import BatonCore
import FoundationEssentials
import Glibc

/// A run's artifacts kept in the history (`Migrations/0013_artifacts.sql`): the files read,
/// digested and written in chunks by the writer, in one item, so that a crash leaves all or none.
extension Store: ArtifactKeeper {
    /// The bytes of one stored chunk (and one read of a file).
    static let artifactChunk = 1 << 20

    public func keep(_ found: ArtifactScan, run: Int64, attempt: Int, done: @escaping @Sendable () -> Void) {
        let at = Timestamp.now
        // Refused while writes fail (a full disk): the files are not kept, which the log says; the run still ends.
        let item = Item(entries: [], completion: { [self] result in
            guard case let .failure(error) = result else { return done() }
            let notice = "artifacts not kept: \(error.message(at: at))"
            submit(Item(entries: [], completion: { _ in done() }, refusedWhileFailing: true, work: { connection in
                try ArtifactRows.replace(ArtifactScan(directory: found.directory, files: [], notices: [notice]), run: run, attempt: attempt,
                                         at: at, on: connection)
            }))
        }, refusedWhileFailing: true, work: { connection in
            try ArtifactRows.replace(found, run: run, attempt: attempt, at: at, on: connection)
        })
        submit(item)
    }
}

/// The artifact rows of one run, written in the writer's transaction.
enum ArtifactRows {
    /// Replaces the run's artifacts and notices with `found`'s. A file that cannot be read (gone,
    /// swapped for a link) is left out, said in a notice; only the database's errors are thrown.
    static func replace(_ found: ArtifactScan, run: Int64, attempt: Int, at: Timestamp, on connection: Connection) throws {
        try connection.withStatement("DELETE FROM artifacts WHERE run_id = ?") { try $0.run([.integer(run)]) }
        try connection.withStatement("DELETE FROM artifact_notices WHERE run_id = ?") { try $0.run([.integer(run)]) }
        var notices = found.notices
        for file in found.files {
            if let why = try keep(file, of: found, run: run, attempt: attempt, at: at, on: connection) { notices.append(why) }
        }
        for (seq, text) in notices.enumerated() {
            try connection.withStatement("INSERT INTO artifact_notices (run_id, attempt, seq, text) VALUES (?, ?, ?, ?)") {
                try $0.run([.integer(run), .integer(Int64(attempt)), .integer(Int64(seq)), .text(text)])
            }
        }
    }

    /// One file, read a chunk at a time (at most the size the look found: the bound holds), digested
    /// as it is written; a notice instead when it cannot be read.
    private static func keep(_ file: ArtifactScan.File, of found: ArtifactScan, run: Int64, attempt: Int, at: Timestamp,
                             on connection: Connection) throws -> String? {
        let fd = found.open(file.name)
        guard fd >= 0 else { return "\(file.name): cannot be read (\(String(cString: strerror(errno)))), not kept" }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return "\(file.name): not a regular file any more, not kept" }
        guard let digest = try? SHA256() else { return "\(file.name): no SHA-256 (libcrypto cannot be loaded), not kept" }
        try connection.withStatement("INSERT INTO artifacts (run_id, attempt, name, size, sha256, type, at) VALUES (?, ?, ?, 0, '', ?, ?)") {
            try $0.run([.integer(run), .integer(Int64(attempt)), .text(file.name), .text(ArtifactType.of(file.name)), .integer(at.rawValue)])
        }
        let id = try connection.scalar("SELECT last_insert_rowid()")?.int64 ?? 0
        var buffer = [UInt8](repeating: 0, count: Store.artifactChunk)
        var size: Int64 = 0
        while size < file.size {
            let want = Int(min(Int64(buffer.count), file.size - size))
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, want) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return "\(file.name): read failed (\(String(cString: strerror(errno)))), not kept" + (try dropping(id, on: connection)) }
            if n == 0 { break }
            let chunk = Array(buffer[..<n])
            digest.update(chunk)
            try connection.withStatement("INSERT INTO artifact_chunks (artifact_id, start, bytes) VALUES (?, ?, ?)") {
                try $0.run([.integer(id), .integer(size), .blob(chunk)])
            }
            size += Int64(n)
        }
        try connection.withStatement("UPDATE artifacts SET size = ?, sha256 = ? WHERE id = ?") {
            try $0.run([.integer(size), .text(digest.finish()), .integer(id)])
        }
        return nil
    }

    private static func dropping(_ id: Int64, on connection: Connection) throws -> String {
        try connection.withStatement("DELETE FROM artifacts WHERE id = ?") { try $0.run([.integer(id)]) }
        return ""
    }
}

extension History {
    /// The files a run kept, by name, and the notices about the others.
    public func artifacts(of run: Int64) throws -> ArtifactList {
        var list = ArtifactList(run: run)
        try connection.withStatement("SELECT name, size, sha256, type, attempt FROM artifacts WHERE run_id = ? ORDER BY name") { s in
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
        let found = try connection.withStatement("SELECT name, size, sha256, type, attempt, id FROM artifacts WHERE run_id = ? AND name = ?") { s in
            try s.bind([.integer(run), .text(name)])
            return try s.step() ? (Self.artifactInfo(s), s.int64(5) ?? 0) : nil
        }
        guard let (info, id) = found else { return nil }
        let from = min(max(offset, 0), info.size)
        var bytes: [UInt8] = []
        try connection.withStatement("""
            SELECT start, bytes FROM artifact_chunks WHERE artifact_id = ?
            AND start >= coalesce((SELECT max(start) FROM artifact_chunks WHERE artifact_id = ? AND start <= ?), 0) ORDER BY start
            """) { s in
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

    private static func artifactInfo(_ s: Statement) -> ArtifactInfo {
        ArtifactInfo(name: s.string(0) ?? "", size: s.int64(1) ?? 0, sha256: s.string(2) ?? "", type: s.string(3) ?? "",
                     attempt: Int(s.int64(4) ?? 0))
    }
}
