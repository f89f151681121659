extension StringProtocol {
    /// The text with every `target` replaced by `replacement`, left to right, matched scalar by
    /// scalar as Foundation's literal `replacingOccurrences` did: a quote followed by a combining
    /// mark is still a quote (Swift's `replacing` compares whole characters and would miss it).
    public func replacingEvery(_ target: String, with replacement: String) -> String {
        let scalars = String(self).unicodeScalars
        return String(scalars.replacing(target.unicodeScalars, with: replacement.unicodeScalars))
    }
}
