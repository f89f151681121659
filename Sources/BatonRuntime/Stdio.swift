import BatonEngine
import FoundationEssentials
import Glibc

/// The process's standard output or error, written straight to its descriptor (no buffer: what
/// is written is out before the next line runs, as FileHandle wrote it).
public struct Stdio: Sendable {
    /// The descriptor written to.
    public let fd: Int32

    /// Standard output (descriptor 1).
    public static let output = Stdio(fd: 1)
    /// Standard error (descriptor 2).
    public static let error = Stdio(fd: 2)

    /// Writes every byte, going on after a short or interrupted write; stops where the descriptor
    /// refuses (a closed pipe, a full disk): there is nowhere left to say so.
    public func write(_ data: Data) {
        data.withUnsafeBytes { bytes in
            var done = 0
            while done < bytes.count {
                let count = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
                if count > 0 { done += count } else if count < 0 && errno == EINTR { continue } else { return }
            }
        }
    }
}
