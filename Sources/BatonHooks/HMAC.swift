import CCrypto

/// HMAC-SHA256 and constant-time comparison from OpenSSL's libcrypto: the webhook signatures'
/// two primitives, never written by hand. libcrypto is opened on first use, not linked: a batond
/// without webhooks never maps it (1.4 MiB of an idle batond's memory).
public enum HMAC {
    /// The bytes of an HMAC-SHA256 digest.
    public static let length = 32

    /// The library's name, as Debian's libssl3 installs it.
    public static let library = "libcrypto.so.3"

    /// libcrypto's functions, or why the library cannot be opened: opened once, then only read.
    private static let crypto: Result<BatonLibCrypto, LibraryMissing> = open(library)

    /// A library that could not be opened, and why.
    public struct LibraryMissing: Error, CustomStringConvertible {
        public let description: String
    }

    /// Opens libcrypto if it is not yet, or throws why it cannot be: batond calls it when it starts
    /// its webhooks, so that a host without the library says so then, not at the first request.
    public static func load() throws(LibraryMissing) {
        _ = try crypto.get()
    }

    static func open(_ library: String) -> Result<BatonLibCrypto, LibraryMissing> {
        let table = UnsafeMutablePointer<BatonLibCrypto>.allocate(capacity: 1)
        defer { table.deallocate() }
        var error = [CChar](repeating: 0, count: 512)
        guard baton_libcrypto_open(library, table, &error, error.count) == 0 else {
            let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(LibraryMissing(description: "webhook signatures need OpenSSL's \(library), which cannot be loaded: \(reason) (Debian's package libssl3 installs it)"))
        }
        return .success(table.pointee)
    }

    /// The functions; batond loaded them before any webhook could ask (`load`), so a failure here is a bug.
    private static var functions: BatonLibCrypto {
        switch crypto {
        case let .success(functions): functions
        case let .failure(missing): preconditionFailure(missing.description)
        }
    }

    /// HMAC-SHA256 of `message` under `key`.
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var count: UInt32 = 0
        let crypto = functions
        let done = key.withUnsafeBufferPointer { key in
            message.withUnsafeBufferPointer { message in
                // A zero-length buffer may have no base address; OpenSSL takes any pointer for length 0.
                crypto.HMAC(crypto.EVP_sha256(), key.baseAddress ?? UnsafePointer(bitPattern: 1), Int32(key.count),
                             message.baseAddress ?? UnsafePointer(bitPattern: 1), message.count, &digest, &count)
            }
        }
        // HMAC fails only without memory, or for a digest OpenSSL lacks: neither is recoverable here.
        precondition(done != nil && count == length, "HMAC-SHA256 failed in libcrypto")
        return Array(digest[..<Int(count)])
    }

    /// Whether `a` and `b` are equal, in time that depends on their lengths only (CRYPTO_memcmp).
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        let crypto = functions
        return a.withUnsafeBytes { a in b.withUnsafeBytes { b in crypto.CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }

    /// The lowercase hex text of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of hex text (either case); nil for an odd length or any other character.
    public static func bytes(hex text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
