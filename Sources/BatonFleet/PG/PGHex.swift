import CLibPQ

/// Bytes as the hex text batond's text-only connections carry them (`decode($n, 'hex')` going in,
/// `encode(…, 'hex')` coming out), a buffer at a time in C (`baton_hex_encode`, `_decode`): an
/// artifact's chunk is a megabyte, and a Swift loop over its bytes cost 0.1 s a MiB in a debug build.
enum PGHex {
    /// `bytes` as lowercase hex digits.
    static func encode(_ bytes: [UInt8]) -> String {
        let count = bytes.count * 2
        guard count > 0 else { return "" }
        return String(unsafeUninitializedCapacity: count) { out in
            bytes.withUnsafeBufferPointer { input in baton_hex_encode(input.baseAddress!, input.count, out.baseAddress!) }
            return count
        }
    }

    /// The bytes of hex digits (either case; a digit of anything else counts as 0, an odd last one is dropped).
    static func decode(_ text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { digits in
            let count = digits.count / 2
            guard count > 0 else { return [] }
            return [UInt8](unsafeUninitializedCapacity: count) { out, made in
                baton_hex_decode(digits.baseAddress!, count, out.baseAddress!)
                made = count
            }
        }
    }
}
