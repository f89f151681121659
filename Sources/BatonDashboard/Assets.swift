import BatonIPC
import Glibc

/// The page's files, embedded at build time from `Assets/`, and the header fields every answer
/// carries: a strict Content-Security-Policy (scripts and styles from this server only, no inline
/// script, no framing), no referrer (the first address carries the token), no cross-origin use.
public enum Assets {
    public static func file(_ name: String) -> HTTPResponse? {
        guard let text = embeddedAssets[name] else { return nil }
        return HTTPResponse(status: 200, contentType: contentType(name), extraFields: securityFields, body: Array(text.utf8))
    }

    /// Debian's Chart.js (libjs-chart.js, 3.9): served as `/chart.js`, from the system's copy, so
    /// that the system's updates reach it; the page draws no chart without it.
    public static let chartLibraryPath = "/usr/share/javascript/chart.js/chart.min.js"

    /// A script the server read from the system, with the page's header fields.
    static func script(_ bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: "text/javascript; charset=utf-8", extraFields: securityFields, body: bytes)
    }

    /// A file's bytes (at most 4 MiB), read when the dashboard starts; nil when it cannot be read.
    static func systemFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65_536)
        while bytes.count <= 4 << 20 {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return bytes }
            bytes.append(contentsOf: buffer[..<count])
        }
        return nil
    }

    static func contentType(_ name: String) -> String {
        if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        if name.hasSuffix(".svg") { return "image/svg+xml" }
        return "application/octet-stream"
    }

    public static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    public static let securityFields: [HTTPRequestHead.Field] = [
        .init(name: "Content-Security-Policy", value: contentSecurityPolicy),
        .init(name: "X-Frame-Options", value: "DENY"),
        .init(name: "Referrer-Policy", value: "no-referrer"),
        .init(name: "Cross-Origin-Opener-Policy", value: "same-origin"),
        .init(name: "Cross-Origin-Resource-Policy", value: "same-origin"),
    ]
}
