import BatonEngine
extension Request {
    /// The longest text `id`, in bytes: every event of a trigger, wait or watch repeats it.
    public static let maxIDLength = 256

    /// The request as batond serves it, whatever its op: its filter's lists as sets and every list,
    /// map and name within its cap, so that what it costs follows from its answer, not from how
    /// often a line repeats itself. Throws `badRequest` naming the field and the cap; it looks at
    /// the request alone, so it comes before any lookup, access check or record of a refusal.
    public func validated() throws(BatonError) -> Request {
        if case let .text(text)? = id, text.utf8.count > Self.maxIDLength {
            throw .badRequest("id is \(text.utf8.count) bytes; at most \(Self.maxIDLength)")
        }
        if let action, action.utf8.count > Action.maxNameLength {
            throw .badRequest("action is \(action.utf8.count) bytes; at most \(Action.maxNameLength)")
        }
        if let params { try Self.checkParams(params) }
        if let text, text.utf8.count > SearchMatch.maxText {
            throw .badRequest("text is \(text.utf8.count) bytes; at most \(SearchMatch.maxText)")
        }
        var request = self
        request.filter = try filter?.validated()
        return request
    }

    /// A trigger's params: the action's declaration judges names and values (`resolveParams`);
    /// these bounds hold before it is looked up, also for a trigger refused and recorded.
    private static func checkParams(_ params: [String: String]) throws(BatonError) {
        guard params.count <= Action.maxParams else {
            throw .badRequest("params has \(params.count) entries; at most \(Action.maxParams)")
        }
        for (name, value) in params.sorted(by: { $0.key < $1.key }) {
            guard name.utf8.count <= Action.maxNameLength else {
                throw .badRequest("params has a name of \(name.utf8.count) bytes; at most \(Action.maxNameLength)")
            }
            guard value.utf8.count <= Action.maxValueLength else {
                throw .badRequest("params.\(name): the value is \(value.utf8.count) bytes; at most \(Action.maxValueLength)")
            }
        }
    }
}
