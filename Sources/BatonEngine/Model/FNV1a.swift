/// FNV-1a, 64 bits: the one hash Baton computes names and fingerprints with where every host
/// and every release must agree on the value (an action's definition, `Action.fingerprint`; the
/// fleet's advisory lock keys; a fleet's connection string in its processes' tag). Not
/// cryptographic; a change of it changes every key a running fleet holds, so its known values
/// are tested.
public struct FNV1a: Sendable, Equatable {
    static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325
    static let prime: UInt64 = 0x0000_0100_0000_01b3

    /// The hash of the bytes added so far (the offset basis before any).
    public private(set) var value = offsetBasis

    public init() {}

    /// Hashes `bytes` in, in order.
    public mutating func add(_ bytes: some Sequence<UInt8>) {
        for byte in bytes { value = (value ^ UInt64(byte)) &* Self.prime }
    }

    /// The hash of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hasher = FNV1a()
        hasher.add(bytes)
        return hasher.value
    }
}
