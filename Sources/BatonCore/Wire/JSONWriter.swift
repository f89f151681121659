/// Writes compact JSON by hand for the values on hot paths (every response line, every
/// transition's detail column), where Foundation's `JSONEncoder` cost more than the rest of the
/// work. The tests check its output decodes to what `JSONEncoder`'s does.
public struct JSONWriter {
    public private(set) var text = ""
    /// For each open object or array: whether the next member needs a comma before it.
    private var needsComma: [Bool] = []
    /// A key was just written: the value that follows belongs to it.
    private var afterKey = false

    public init() {}

    public mutating func beginObject() { valueStart(); text += "{"; needsComma.append(false) }
    public mutating func endObject() { text += "}"; needsComma.removeLast() }
    public mutating func beginArray() { valueStart(); text += "["; needsComma.append(false) }
    public mutating func endArray() { text += "]"; needsComma.removeLast() }

    /// Starts a member of the current object; its value follows.
    public mutating func key(_ name: String) {
        if needsComma.last == true { text += "," }
        if !needsComma.isEmpty { needsComma[needsComma.count - 1] = true }
        text += "\"" + name + "\":"
        afterKey = true
    }

    private mutating func valueStart() {
        if afterKey { afterKey = false; return }
        guard let last = needsComma.last else { return }
        if last { text += "," }
        needsComma[needsComma.count - 1] = true
    }

    public mutating func string(_ value: String) { valueStart(); Self.appendString(value, to: &text) }
    public mutating func int<I: BinaryInteger>(_ value: I) { valueStart(); text += String(value) }
    public mutating func bool(_ value: Bool) { valueStart(); text += value ? "true" : "false" }
    public mutating func double(_ value: Double) { valueStart(); text += value.isFinite ? "\(value)" : "null" }
    /// Text that is already JSON.
    public mutating func raw(_ json: String) { valueStart(); text += json }

    // Members that are left out when nil, as `JSONEncoder` leaves out nil optionals.
    public mutating func field(_ name: String, _ value: String?) { if let value { key(name); string(value) } }
    public mutating func field<I: BinaryInteger>(_ name: String, _ value: I?) { if let value { key(name); int(value) } }
    public mutating func field(_ name: String, _ value: Bool?) { if let value { key(name); bool(value) } }
    public mutating func field(_ name: String, _ value: Double?) { if let value { key(name); double(value) } }

    /// `{"a":"1","b":"2"}` with keys sorted.
    public mutating func stringMap(_ map: [String: String]) {
        beginObject()
        for name in map.keys.sorted() { key(name); string(map[name]!) }
        endObject()
    }

    /// Appends a JSON string literal: quotes, backslashes and control characters escaped.
    public static func appendString(_ value: String, to text: inout String) {
        text += "\""
        var plain = true
        for unit in value.utf8 where unit < 0x20 || unit == 0x22 || unit == 0x5C { plain = false; break }
        if plain {
            text += value
        } else {
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                default:
                    if scalar.value < 0x20 {
                        let hex = String(scalar.value, radix: 16)
                        text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    } else {
                        text.unicodeScalars.append(scalar)
                    }
                }
            }
        }
        text += "\""
    }
}

extension TransitionDetail {
    /// The detail as compact JSON, keys sorted, absent fields left out: the text `JSONEncoder`
    /// with sorted keys gives, written by hand for the path of every transition.
    public func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("attempt", attempt)
        json.field("backoff", backoff)
        json.field("by", by)
        json.field("cpuSystem", cpuSystem)
        json.field("cpuUser", cpuUser)
        json.field("error", error)
        json.field("exitCode", exitCode)
        json.field("leftovers", leftovers)
        if let locks {
            json.key("locks")
            json.beginArray()
            for lock in locks { json.string(lock) }
            json.endArray()
        }
        json.field("memoryPeak", memoryPeak)
        json.field("pgid", pgid)
        json.field("reason", reason)
        json.field("replacedBy", replacedBy)
        if let replaces {
            json.key("replaces")
            json.beginArray()
            for id in replaces { json.int(id) }
            json.endArray()
        }
        json.field("signal", signal)
        json.field("via", via)
        json.endObject()
    }
}
