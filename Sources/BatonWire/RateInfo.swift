import BatonEngine

/// actions and status: an action's `rateLimit`; in status, how many runs may still start now in
/// each bucket (the action, or each key) that has starts inside the window.
public struct RateInfo: Codable, Sendable, Equatable {
    public var runs: Int
    /// The window, in microseconds.
    public var per: Int64
    /// `key` or `action`.
    public var scope: String
    /// `reject` or `delay`.
    public var over: String
    /// status: each bucket with starts inside the window now (its key, or the action's name), the
    /// runs it may still start, and when its oldest start leaves the window (µs); absent in `actions`.
    public var used: [Use]?

    public struct Use: Codable, Sendable, Equatable {
        public var key: String
        public var left: Int
        public var frees: Int64?
        public init(key: String, left: Int, frees: Int64?) {
            self.key = key
            self.left = left
            self.frees = frees
        }
    }

    public init(_ limit: RateLimit, used: [Use]? = nil) {
        runs = limit.runs
        per = limit.per.microseconds
        scope = limit.scope.rawValue
        over = limit.over.rawValue
        self.used = used
    }

    public init(runs: Int, per: Int64, scope: String, over: String, used: [Use]?) {
        self.runs = runs
        self.per = per
        self.scope = scope
        self.over = over
        self.used = used
    }

    func write(to json: inout JSONWriter) {
        json.beginObject()
        json.field("runs", Int64(runs))
        json.field("per", per)
        json.field("scope", scope)
        json.field("over", over)
        if let used {
            json.key("used")
            json.beginArray()
            for use in used {
                json.beginObject()
                json.field("key", use.key)
                json.field("left", Int64(use.left))
                json.field("frees", use.frees)
                json.endObject()
            }
            json.endArray()
        }
        json.endObject()
    }
}

extension JSONBytes {
    mutating func rateInfo() -> RateInfo? {
        var runs: Int64?, per: Int64?, scope: String?, over: String?, used: [RateInfo.Use]?
        let read = object { key, reader in
            switch key {
            case "runs": return reader.into(&runs) { $0.integer() }
            case "per": return reader.into(&per) { $0.integer() }
            case "scope": return reader.into(&scope) { $0.string() }
            case "over": return reader.into(&over) { $0.string() }
            case "used": return reader.into(&used) { $0.array { $0.rateUse() } }
            default: return false
            }
        }
        guard read, let runs, let per, let scope, let over else { return nil }
        return RateInfo(runs: Int(runs), per: per, scope: scope, over: over, used: used)
    }

    private mutating func rateUse() -> RateInfo.Use? {
        var key: String?, left: Int64?, frees: Int64?
        let read = object { name, reader in
            switch name {
            case "key": return reader.into(&key) { $0.string() }
            case "left": return reader.into(&left) { $0.integer() }
            case "frees": return reader.into(&frees) { $0.integer() }
            default: return false
            }
        }
        guard read, let key, let left else { return nil }
        return RateInfo.Use(key: key, left: Int(left), frees: frees)
    }
}
