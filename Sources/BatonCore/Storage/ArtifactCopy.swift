import BatonProcess
import Glibc

/// Why a file was not kept: the notice the run's list says of it, or nil where the history could
/// not take a chunk (the keep ends).
public struct ArtifactNotKept: Error {
    public var notice: String?
}

extension ArtifactScan {
    /// One file, opened without following a link (a regular file, the run's user's own where not
    /// batond's), read a chunk at a time up to the size the look found (the bound holds), digested
    /// as it goes, each chunk handed to `write` with its start (false: the history could not take
    /// it). The one copy both keepers use: SQLite's (`StoreArtifacts`) and a fleet's (`FleetArtifacts`).
    public func copy(_ file: File, chunk: Int, write: ([UInt8], _ start: Int64) throws -> Bool) rethrows
        -> Result<(size: Int64, sha256: String), ArtifactNotKept> {
        let fd: Int32
        switch openChecked(file.name) {
        case let .success(opened): fd = opened
        case let .failure(refused): return .failure(ArtifactNotKept(notice: refused.notice))
        }
        defer { close(fd) }
        guard let digest = try? SHA256() else {
            return .failure(ArtifactNotKept(notice: "\(file.name): no SHA-256 (libcrypto cannot be loaded), not kept"))
        }
        var buffer = [UInt8](repeating: 0, count: chunk)
        var size: Int64 = 0
        while size < file.size {
            let want = Int(min(Int64(buffer.count), file.size - size))
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, want) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return .failure(ArtifactNotKept(notice: "\(file.name): read failed (\(String(cString: strerror(errno)))), not kept")) }
            if n == 0 { break }
            let bytes = Array(buffer[..<n])
            digest.update(bytes)
            guard try write(bytes, size) else { return .failure(ArtifactNotKept(notice: nil)) }
            size += Int64(n)
        }
        return .success((size, digest.finish()))
    }
}
