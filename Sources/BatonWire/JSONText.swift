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

    public static func params(_ text: String?) -> [String: String] {
        guard let text, text != "{}" else { return [:] }
        return (try? decoder.decode([String: String].self, from: Data(text.utf8))) ?? [:]
    }

    public static func detail(_ text: String?) -> TransitionDetail {
        guard let text, text != "{}" else { return TransitionDetail() }
        return (try? decoder.decode(TransitionDetail.self, from: Data(text.utf8))) ?? TransitionDetail()
    }
}
