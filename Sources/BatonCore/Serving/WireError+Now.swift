import BatonWire

extension WireError {
    /// The answer for `error`, its sentence as of now.
    public init(_ error: BatonError) { self.init(error, at: .now) }
}
