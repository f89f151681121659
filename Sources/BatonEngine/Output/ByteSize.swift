/// Sizes as people write them in the config: a whole number of bytes, or with `KiB`, `MiB`,
/// `GiB` (also `K`, `M`, `G`, `KB`, `MB`, `GB`, all powers of 1024), up to 1 TiB.
public enum ByteSize {
    /// The largest size accepted.
    public static let maximum: Int64 = 1 << 40

    /// The bytes `text` says, or nil when it is not a size or is larger than `maximum`.
    public static func parse(_ text: String) -> Int64? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 13, let number = Int64(digits) else { return nil }
        let unit = text.dropFirst(digits.count).trimmingPrefix(" ")
        let shift: Int64
        switch unit.lowercased() {
        case "", "b": shift = 0
        case "k", "kb", "kib": shift = 10
        case "m", "mb", "mib": shift = 20
        case "g", "gb", "gib": shift = 30
        default: return nil
        }
        guard number <= maximum >> shift else { return nil }
        return number << shift
    }
}
