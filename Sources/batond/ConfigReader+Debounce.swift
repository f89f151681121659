import BatonCore

extension ConfigReader {
    /// `debounce: "5s"` and `maxWait: "1m"` (default ten windows): a burst of triggers of a key
    /// shares one run, which starts once the key has been quiet for the window, or `maxWait` after
    /// the burst's first trigger. `maxWait` alone, or shorter than the window, is refused.
    mutating func debounce(_ fields: [String: JSONValue], into action: inout Action, at: String) {
        if let value = fields["debounce"] { action.debounce = positiveDuration(value, at: "\(at).debounce") }
        guard let value = fields["maxWait"] else { return }
        guard fields["debounce"] != nil else {
            return fail("\(at).maxWait", "needs debounce: it caps how long a debounced run waits after the first trigger of its burst")
        }
        guard let maxWait = positiveDuration(value, at: "\(at).maxWait") else { return }
        if let window = action.debounce, maxWait < window {
            return fail("\(at).maxWait", "must be at least debounce (\(DurationText.format(window))), got \(DurationText.format(maxWait))")
        }
        action.maxWait = maxWait
    }
}
