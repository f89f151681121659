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
        var json = JSONWriter()
        detail.write(to: &json)
        return json.text
    }

    /// A params column's object of strings. Read by hand (`JSONBytes.stringMap`): every run row
    /// the fleet reads decodes one (a feed's transition, a start, each live run of a refresh), and
    /// `JSONDecoder` spent about 30,000 instructions on each, a quarter of a fleet host's work
    /// per run (scripts/bench-fleet-instructions). What the hand reader does not take (a key given
    /// twice, a value not a string, text not JSON) goes to `JSONDecoder` as before.
    public static func params(_ text: String?) -> [String: String] {
        guard var text, text != "{}" else { return [:] }
        let read = text.withUTF8 { utf8 -> [String: String]? in
            var reader = JSONBytes(utf8)
            guard let map = reader.stringMap(), reader.atEnd() else { return nil }
            return map
        }
        if let read { return read }
        return (try? decoder.decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }

    public static func detail(_ text: String?) -> TransitionDetail {
        guard let text, text != "{}" else { return TransitionDetail() }
        return (try? decoder.decode(TransitionDetail.self, from: Data(text.utf8))) ?? TransitionDetail()
    }
}
