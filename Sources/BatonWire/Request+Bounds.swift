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
        if let asGroup { try Self.checkGroupPrincipal(asGroup, actingAs) } else if let actingAs, !Self.isUserName(actingAs) {
            throw .badRequest("as: \(Action.quoted(String(actingAs.prefix(40)))) is no user name (a letter or _ first, then letters, digits, _ . -; at most \(Self.maxUserNameLength) bytes)")
        }
        guard let filter else { return self }
        var request = self
        request.filter = try filter.validated()
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

    /// The longest user name `as` takes (Linux's `LOGIN_NAME_MAX` less its NUL is 255; useradd's default 32).
    public static let maxUserNameLength = 32

    /// A name of the user database's usual shape: `[A-Za-z_][A-Za-z0-9_.-]*`, with a `$` at the end
    /// allowed (machine accounts), at most `maxUserNameLength` bytes. Never a number (which
    /// `getpwnam` callers may read as a uid), never a space, slash, colon or control character.
    public static func isUserName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= maxUserNameLength else { return false }
        let letter = { (byte: UInt8) in (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 95 }
        guard letter(first) else { return false }
        for (index, byte) in bytes.enumerated().dropFirst() {
            let last = index == bytes.count - 1
            guard letter(byte) || (byte >= 48 && byte <= 57) || byte == 46 || byte == 45 || (last && byte == 36) else { return false }
        }
        return true
    }

    /// The longest name `as` takes for a group principal (`asGroup`): an e-mail address, a provider's name.
    public static let maxPrincipalLength = 128

    /// A group principal's name: 1 to `maxPrincipalLength` bytes of printable ASCII, no space
    /// (the dashboard sanitizes a proxy's name to this before it asks).
    public static func isPrincipalName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maxPrincipalLength && name.utf8.allSatisfy { $0 > 32 && $0 < 127 }
    }

    /// `asGroup` names a group of the user database's shape, and comes with `as` naming the person.
    private static func checkGroupPrincipal(_ group: String, _ name: String?) throws(BatonError) {
        guard isUserName(group) else {
            throw .badRequest("asGroup: \(Action.quoted(String(group.prefix(40)))) is no group name (a letter or _ first, then letters, digits, _ . -; at most \(maxUserNameLength) bytes)")
        }
        guard let name else { throw .badRequest("asGroup needs as: the person's name for the history") }
        guard isPrincipalName(name) else {
            throw .badRequest("as (with asGroup): \(Action.quoted(String(name.prefix(40)))) is no name of 1 to \(maxPrincipalLength) bytes of printable ASCII without spaces")
        }
    }
}
