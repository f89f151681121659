import BatonEngine
import FoundationEssentials

/// Compact JSON for the text columns: sorted keys, so equal values are equal text.
public enum JSONText {
    private static let decoder = JSONDecoder()

    /// `{"a":"1","b":"2"}`, keys sorted: written by hand, as it is on the path of every trigger.
    public static func object(_ params: [String: String]) -> String {
        guard !params.isEmpty else { return "{}" }
        var json = JSONWriter()
        json.stringMap(params)
        return json.text
    }

    /// A transition's detail, keys sorted, absent fields left out (`TransitionDetail.write`).
    public static func detail(_ detail: TransitionDetail) -> String {
        String(decoding: detailUTF8(detail), as: UTF8.self)
    }

    /// `detail`'s text as UTF-8, for a writer that binds the bytes (no `String` made of them: the
    /// store's writer does it for every transition, issue 39).
    public static func detailUTF8(_ detail: TransitionDetail) -> [UInt8] {
        var json = JSONWriter(capacity: 128)
        detail.write(to: &json)
        return json.take()
    }

    /// A params column's object of strings. Read by hand (`JSONBytes.stringMap`): every run row
    /// the fleet reads decodes one (a feed's transition, a start, each live run of a refresh), and
    /// `JSONDecoder` spent about 30,000 instructions on each, a quarter of a fleet host's work
    /// per run (scripts/bench-fleet-instructions). What the hand reader does not take (a key given
    /// twice, a value not a string, text not JSON) goes to `JSONDecoder` as before.
    public static func params(_ text: String?) -> [String: String] {
        guard let text, text != "{}" else { return [:] }
        if let read = paramsByHand(text) { return read }
        return (try? decoder.decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }

    /// `params`' hand reader alone: nil for what it leaves to `JSONDecoder`.
    static func paramsByHand(_ text: String) -> [String: String]? {
        var text = text
        return text.withUTF8 { utf8 -> [String: String]? in
            var reader = JSONBytes(utf8)
            guard let map = reader.stringMap(), reader.atEnd() else { return nil }
            return map
        }
    }

    /// A transition's detail column, read by hand as `params` is (each transition the fleet's feed
    /// delivers has one: `JSONDecoder` spent about 37,000 instructions on each); what the hand
    /// reader does not take (a key it does not know, a number out of its field's range) goes to
    /// `JSONDecoder` as before.
    public static func detail(_ text: String?) -> TransitionDetail {
        guard let text, text != "{}" else { return TransitionDetail() }
        if let read = detailByHand(text) { return read }
        return (try? decoder.decode(TransitionDetail.self, from: Data(text.utf8))) ?? TransitionDetail()
    }

    /// `detail`'s hand reader alone: nil for what it leaves to `JSONDecoder`.
    static func detailByHand(_ text: String) -> TransitionDetail? {
        var text = text
        return text.withUTF8 { utf8 -> TransitionDetail? in
            var reader = JSONBytes(utf8)
            guard let detail = readDetail(&reader), reader.atEnd() else { return nil }
            return detail
        }
    }

    /// `TransitionDetail`'s fields as its `Codable` names them, each a value or `null`.
    private static func readDetail(_ reader: inout JSONBytes) -> TransitionDetail? {
        var detail = TransitionDetail()
        func field<T>(_ path: WritableKeyPath<TransitionDetail, T?>, _ reader: inout JSONBytes, _ read: (inout JSONBytes) -> T?) -> Bool {
            guard let value = reader.optional(read) else { return false }
            detail[keyPath: path] = value
            return true
        }
        let read = reader.object { key, reader in
            switch key {
            case "reason": field(\.reason, &reader) { $0.string() }
            case "attempt": field(\.attempt, &reader) { $0.integer(as: Int.self) }
            case "exitCode": field(\.exitCode, &reader) { $0.integer(as: Int32.self) }
            case "signal": field(\.signal, &reader) { $0.integer(as: Int32.self) }
            case "error": field(\.error, &reader) { $0.string() }
            case "by": field(\.by, &reader) { $0.integer(as: UInt32.self) }
            case "replacedBy": field(\.replacedBy, &reader) { $0.integer() }
            case "replaces": field(\.replaces, &reader) { $0.array { $0.integer() } }
            case "backoff": field(\.backoff, &reader) { $0.integer() }
            case "pgid": field(\.pgid, &reader) { $0.integer(as: Int32.self) }
            case "leftovers": field(\.leftovers, &reader) { $0.integer(as: Int.self) }
            case "cpuUser": field(\.cpuUser, &reader) { $0.integer() }
            case "cpuSystem": field(\.cpuSystem, &reader) { $0.integer() }
            case "memoryPeak": field(\.memoryPeak, &reader) { $0.integer() }
            case "via": field(\.via, &reader) { $0.string() }
            case "locks": field(\.locks, &reader) { $0.array { $0.string() } }
            case "debounce": field(\.debounce, &reader) { $0.integer() }
            default: false
            }
        }
        return read ? detail : nil
    }
}
