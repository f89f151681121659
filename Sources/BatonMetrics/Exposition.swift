import BatonEngine
import BatonRuntime
/// Prometheus' text exposition format (version 0.0.4): `# HELP` and `# TYPE` once per family,
/// then its samples, label values escaped.
public struct Exposition: Sendable {
    public enum Kind: String, Sendable { case counter, gauge, histogram }

    public private(set) var text = ""

    public init() {}

    /// Starts a family; its samples follow.
    public mutating func family(_ name: String, _ kind: Kind, _ help: String) {
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        text += name + Self.labels(labels) + " " + Self.format(value) + "\n"
    }

    /// A histogram's `_bucket` samples (cumulative, `le` last among the labels), `_sum` and `_count`.
    public mutating func histogram(_ name: String, _ labels: [(String, String)] = [], _ histogram: Histogram) {
        for (bound, count) in zip(histogram.bounds.map(Self.format) + ["+Inf"], histogram.cumulative) {
            text += name + "_bucket" + Self.labels(labels + [("le", bound)]) + " " + String(count) + "\n"
        }
        sample(name + "_sum", labels, histogram.sum)
        sample(name + "_count", labels, Double(histogram.count))
    }

    static func labels(_ labels: [(String, String)]) -> String {
        labels.isEmpty ? "" : "{" + labels.map { "\($0.0)=\"\(escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
    }

    /// Backslash, double quote and newline escaped, as label values need.
    static func escapeLabel(_ value: String) -> String {
        var out = ""
        for character in value {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(character)
            }
        }
        return out
    }

    /// Backslash and newline escaped, as HELP text needs.
    static func escapeHelp(_ text: String) -> String {
        text.replacingEvery("\\", with: "\\\\").replacingEvery("\n", with: "\\n")
    }

    /// Whole numbers without a fraction, others as Swift prints them (shortest round trip),
    /// and the format's own spellings of infinities and NaN.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
