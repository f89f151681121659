import BatonCore

extension ConfigReader {
    /// The largest `artifacts.keep`: a run's files are kept in the history (one host's SQLite, or
    /// the fleet's PostgreSQL), published in one transaction.
    static let maxArtifactsKeep: Int64 = 4 << 30

    /// `artifacts: { keep: "100MiB" }`: the files a run leaves in `$BATON_ARTIFACTS` are kept with
    /// it, up to `keep` bytes in all (over it, none is). `keep` is required: a size from 1 byte to 4 GiB.
    mutating func artifactsKeep(_ value: JSONValue, at: String) -> Int64? {
        guard let fields = object(value, at: at, allowed: ["keep"]) else { return nil }
        guard let keep = fields["keep"] else {
            fail("\(at).keep", "missing: how many bytes of files a run may keep, such as \"100MiB\"")
            return nil
        }
        var bytes: Int64?
        if case let .string(text) = keep { bytes = ByteSize.parse(text) }
        if case let .number(number) = keep, number.rounded() == number, number >= 0, number <= Double(ByteSize.maximum) { bytes = Int64(number) }
        guard let bytes, bytes > 0, bytes <= Self.maxArtifactsKeep else {
            fail("\(at).keep", "expected a size from 1 byte to 4GiB such as \"100MiB\" or \"512KiB\", got \(Self.show(keep))")
            return nil
        }
        return bytes
    }
}
