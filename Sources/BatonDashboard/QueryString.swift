import BatonCore

/// The `a=1&b=two%20words` of a request's address, decoded (`+` is a space); a malformed
/// escape keeps its text as it came.
public enum QueryString {
    public struct Pair: Equatable, Sendable {
        public var name: String
        public var value: String
    }

    public static func decode(_ query: String) -> [Pair] {
        query.split(separator: "&").prefix(64).map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return Pair(name: unescape(parts[0]), value: parts.count > 1 ? unescape(parts[1]) : "")
        }
    }

    /// A path segment's text: `%XX` decoded, `+` kept (only a query's `+` is a space).
    static func unescapePath(_ text: Substring) -> String {
        unescape(Substring(text.split(separator: "+", omittingEmptySubsequences: false).joined(separator: "%2B")))
    }

    static func unescape(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%"), index + 2 < utf8.count, let high = hex(utf8[index + 1]), let low = hex(utf8[index + 2]) {
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(byte == UInt8(ascii: "+") ? 32 : byte)
                index += 1
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// A search from the page's query: `text` (what to find), and the history's filters without
    /// `text` (20 runs unless `limit` says otherwise).
    public static func search(_ query: String) -> Result<(text: String, filter: HistoryFilter), BatonError> {
        guard let text = decode(query).first(where: { $0.name == "text" })?.value, !text.isEmpty else {
            return .failure(.badRequest("text: what to search for is missing"))
        }
        let rest = query.split(separator: "&").filter { !$0.hasPrefix("text=") && $0 != "text" }
        return historyFilter(rest.joined(separator: "&")).map { filter in
            var filter = filter
            if !rest.contains(where: { $0.hasPrefix("limit=") }) { filter.limit = 20 }
            return (text, filter)
        }
    }

    /// A history filter from the page's query: `action` and `phase` (repeatable), `since` and
    /// `until` (µs since the epoch), `param` (`name=value`, repeatable), `limit`; an unknown name or a
    /// bad value is an error naming it.
    public static func historyFilter(_ query: String) -> Result<HistoryFilter, BatonError> {
        var filter = HistoryFilter()
        for pair in decode(query) {
            switch pair.name {
            case "action": filter.actions.append(pair.value)
            case "phase":
                guard let phase = Phase(rawValue: pair.value) else { return .failure(.badRequest("phase: no phase is called \(pair.value)")) }
                filter.phases.append(phase)
            case "since", "until":
                guard let micros = Int64(pair.value) else { return .failure(.badRequest("\(pair.name): expected microseconds since the epoch, got \(pair.value)")) }
                if pair.name == "since" { filter.since = Timestamp(rawValue: micros) } else { filter.until = Timestamp(rawValue: micros) }
            case "param":
                let parts = pair.value.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, !parts[0].isEmpty else { return .failure(.badRequest("param: expected name=value, got \(pair.value)")) }
                filter.params[String(parts[0])] = String(parts[1])
            case "limit":
                guard let limit = Int(pair.value), (0...1_000).contains(limit) else { return .failure(.badRequest("limit: expected 0 to 1000, got \(pair.value)")) }
                filter.limit = limit
            default:
                return .failure(.badRequest("the history takes action, phase, since, until, param and limit, not \(pair.name)"))
            }
        }
        return .success(filter)
    }
}
