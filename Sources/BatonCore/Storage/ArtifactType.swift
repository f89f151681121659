/// The media type of an artifact, from the extension of its name (the part after the last dot
/// of its last component, case ignored); `application/octet-stream` for any other. Stored with it,
/// served as its `Content-Type` (always as an attachment).
public enum ArtifactType {
    static let byExtension: [String: String] = [
        "txt": "text/plain; charset=utf-8", "log": "text/plain; charset=utf-8", "md": "text/markdown; charset=utf-8",
        "csv": "text/csv; charset=utf-8", "tsv": "text/tab-separated-values; charset=utf-8",
        "json": "application/json", "ndjson": "application/x-ndjson", "xml": "application/xml",
        "yaml": "application/yaml", "yml": "application/yaml", "toml": "application/toml",
        "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8", "css": "text/css", "js": "text/javascript",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "svg": "image/svg+xml", "pdf": "application/pdf",
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip", "tar": "application/x-tar",
        "bz2": "application/x-bzip2", "xz": "application/x-xz", "zst": "application/zstd", "7z": "application/x-7z-compressed",
        "deb": "application/vnd.debian.binary-package", "rpm": "application/x-rpm", "wasm": "application/wasm",
        "xml.gz": "application/gzip", "sql": "application/sql", "sh": "text/x-shellscript; charset=utf-8",
    ]

    /// The type of a file named `name`.
    public static func of(_ name: String) -> String {
        let last = name.split(separator: "/").last.map(String.init) ?? name
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return "application/octet-stream" }
        return byExtension[last[last.index(after: dot)...].lowercased()] ?? "application/octet-stream"
    }
}
