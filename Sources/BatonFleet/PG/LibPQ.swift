import CLibPQ

/// libpq, opened on first use (a fleet's first connection, or `load()` at its start) rather than
/// linked: a batond on one machine never maps it, nor the dozen libraries it brings.
public enum LibPQ {
    /// The library's name, as Debian's libpq5 installs it.
    public static let library = "libpq.so.5"

    /// Opened on first use (a global's lazy initialiser runs once), then only read.
    private static let opened: Result<BatonLibPQ, PGError> = open(library)

    /// Opens libpq if it is not yet, or throws why it cannot be: a fleet's batond calls it at
    /// start, so that a host without the library says so at once rather than at its first query.
    public static func load() throws(PGError) {
        _ = try functions()
    }

    /// libpq's functions.
    static func functions() throws(PGError) -> BatonLibPQ {
        try opened.get()
    }

    /// Opens `library`; the error names it and says which package brings it.
    static func open(_ library: String) -> Result<BatonLibPQ, PGError> {
        let table = UnsafeMutablePointer<BatonLibPQ>.allocate(capacity: 1)
        defer { table.deallocate() }
        var error = [CChar](repeating: 0, count: 512)
        guard baton_libpq_open(library, table, &error, error.count) == 0 else {
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(PGError(message: "a fleet needs PostgreSQL's client library \(library), which cannot be loaded: \(reason) (Debian's package libpq5 installs it)"))
        }
        return .success(table.pointee)
    }
}
