import BatonCore
import Foundation
import Testing

/// batond played by a test on a real Unix socket: the listener, a connection's first request,
/// and the lines sent back (`WaitRestartTests`, `WatchOffPoolTests`).
enum FakeBatond {
    /// A stream socket listening at `path`.
    static func listen(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        try #require(bound == 0 && Glibc.listen(fd, 16) == 0)
        return fd
    }

    /// The first request line `client` sends, read to its newline (nil where the connection ends
    /// first, or the line is not a request).
    static func request(on client: Int32) -> Request? {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var got: [UInt8] = []
        while !got.contains(UInt8(ascii: "\n")) {
            let n = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
            if n <= 0 { return nil }
            got += buffer.prefix(n)
        }
        return try? JSONDecoder().decode(Request.self, from: Data(got.prefix { $0 != UInt8(ascii: "\n") }))
    }

    /// Writes `line` and its newline to `client`.
    static func send(_ line: [UInt8], to client: Int32) {
        let whole = line + [UInt8(ascii: "\n")]
        _ = whole.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
    }
}
