/// "Did you mean …": the known name closest to one that is not known (a config field, an action,
/// a command, an option), by edit distance. One rule for every such name, so that the config, the
/// CLI and its answers from batond suggest alike.
public enum Suggestion {
    /// The longest name compared: longer ones (a fuzzer's megabyte key) are not typos of a name.
    public static let maxLength = 64

    /// The name among `known` closest to `name`, when it is close: at most 2 edits (a letter
    /// added, dropped, changed, or two neighbours swapped), and fewer than half its letters, so
    /// that `ls` suggests nothing and `stauts` suggests `status`. Ties go to the first in `known`;
    /// `name` itself (exactly) is never suggested.
    public static func closest(to name: String, among known: some Sequence<String>) -> String? {
        let typed = Array(name.lowercased())
        guard !typed.isEmpty, typed.count <= maxLength else { return nil }
        var best: (name: String, distance: Int)?
        for candidate in known where candidate != name {
            let letters = Array(candidate.lowercased())
            let limit = min(2, (letters.count - 1) / 2, best.map { $0.distance - 1 } ?? 2)
            guard limit >= 0, let distance = distance(typed, letters, limit: limit) else { continue }
            best = (candidate, distance)
        }
        return best?.name
    }

    /// The optimal string alignment distance (Levenshtein with adjacent swaps) between `a` and
    /// `b`, or nil when it is more than `limit`: each row's smallest value is a lower bound, so
    /// the walk stops as soon as it passes the limit.
    static func distance(_ a: [Character], _ b: [Character], limit: Int) -> Int? {
        guard abs(a.count - b.count) <= limit, a.count <= maxLength, b.count <= maxLength else { return nil }
        guard !a.isEmpty else { return b.count }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                var value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { value = min(value, before[j - 2] + 1) }
                current[j] = value
            }
            guard current.min()! <= limit else { return nil }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count] <= limit ? previous[b.count] : nil
    }

    /// `Try: did you mean "deploy"?`'s words, or nil when no known name is close.
    public static func didYouMean(_ name: String, among known: some Sequence<String>) -> String? {
        closest(to: name, among: known).map { "did you mean \(Action.quoted($0))?" }
    }
}
