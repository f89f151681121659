import CCrypto

/// SHA-256 from OpenSSL's libcrypto (EVP), a piece at a time (finished once): the artifacts' digests, never
/// written by hand. libcrypto is opened at the first digest, not linked, as BatonHooks opens it.
public final class SHA256 {
    /// The library's name, as Debian's libssl3 installs it.
    public static let library = "libcrypto.so.3"

    private static let crypto: Result<BatonLibCrypto, SHA256Unavailable> = {
        let table = UnsafeMutablePointer<BatonLibCrypto>.allocate(capacity: 1)
        defer { table.deallocate() }
        var error = [CChar](repeating: 0, count: 512)
        guard baton_libcrypto_open(library, table, &error, error.count) == 0 else {
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(SHA256Unavailable(description: "artifacts' digests need OpenSSL's \(library), which cannot be loaded: \(reason) (Debian's package libssl3 installs it)"))
        }
        return .success(table.pointee)
    }()

    private let functions: BatonLibCrypto
    private let context: OpaquePointer

    /// A new digest; throws when libcrypto cannot be had.
    public init() throws(SHA256Unavailable) {
        let functions = try Self.crypto.get()
        guard let context = functions.EVP_MD_CTX_new() else { throw SHA256Unavailable(description: "libcrypto could not start a SHA-256 digest") }
        guard functions.EVP_DigestInit_ex(context, functions.EVP_sha256(), nil) == 1 else {
            functions.EVP_MD_CTX_free(context)
            throw SHA256Unavailable(description: "libcrypto could not start a SHA-256 digest")
        }
        self.functions = functions
        self.context = context
    }

    deinit { functions.EVP_MD_CTX_free(context) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        precondition(functions.EVP_DigestUpdate(context, base, bytes.count) == 1, "SHA-256 failed in libcrypto")
    }

    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest, lowercase hex.
    public func finish() -> String {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var count: UInt32 = 0
        precondition(functions.EVP_DigestFinal_ex(context, &digest, &count) == 1 && count == 32, "SHA-256 failed in libcrypto")
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        for byte in digest[..<32] {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The digest of `bytes`, lowercase hex.
    public static func hex(_ bytes: [UInt8]) throws(SHA256Unavailable) -> String {
        let digest = try SHA256()
        digest.update(bytes)
        return digest.finish()
    }
}

/// libcrypto could not be had.
public struct SHA256Unavailable: Error, CustomStringConvertible {
    public let description: String
}
