import BatonIPC

/// The page's files, embedded at build time from `Assets/`, and the header fields every answer
/// carries: a strict Content-Security-Policy (scripts and styles from this server only, no inline
/// script, no framing), no referrer (the first address carries the token), no cross-origin use.
public enum Assets {
    public static func file(_ name: String) -> HTTPResponse? {
        guard let text = embeddedAssets[name] else { return nil }
        return HTTPResponse(status: 200, contentType: contentType(name), extraFields: securityFields, body: Array(text.utf8))
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
