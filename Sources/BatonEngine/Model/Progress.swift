/// How far along a run is, as the action reports it on `BATON_PROGRESS_FD`.
public struct Progress: Codable, Sendable, Equatable {
    /// Done so far, from 0 to 1, when known.
    public var fraction: Double?
    /// Steps done and total, when reported as `3/10`.
    public var completed: Int?
    public var total: Int?
    /// What the action says it is doing.
    public var message: String?

    public init(fraction: Double? = nil, completed: Int? = nil, total: Int? = nil, message: String? = nil) {
        self.fraction = fraction
        self.completed = completed
        self.total = total
        self.message = message
    }

    /// The most characters of a message kept: a longer one is cut there.
    public static let messageLimit = 200

    /// Parses one progress line: `3/10`, `0.42`, `42%`, each optionally followed by a message.
    /// A line that is none of these is taken as a message alone. Nil for a blank line.
    public init?(line: String) {
        let text = line.trimmingWhitespace()
        guard !text.isEmpty else { return nil }
        let head = text.prefix { $0 != " " && $0 != "\t" }
        let message = text.dropFirst(head.count).trimmingWhitespace()
        let tail = message.isEmpty ? nil : String(message.prefix(Self.messageLimit))
        if head.hasSuffix("%"), let percent = Double(head.dropLast()), percent.isFinite {
            self.init(fraction: min(max(percent / 100, 0), 1), message: tail)
        } else if let slash = head.firstIndex(of: "/"),
                  let done = Int(head[..<slash]), let total = Int(head[head.index(after: slash)...]),
                  total > 0, done >= 0 {
            self.init(fraction: min(Double(done) / Double(total), 1), completed: done, total: total, message: tail)
        } else if let value = Double(head), value.isFinite, value >= 0, value <= 1 {
            self.init(fraction: value, message: tail)
        } else {
            self.init(message: String(text.prefix(Self.messageLimit)))
        }
    }
}
