import BatonEngine
/// An action as `FastResponse` reads it: every field `ActionInfo.write(to:)` writes.
extension JSONBytes {
    mutating func actionInfo() -> ActionInfo? {
        var info = ActionInfo(name: "", description: nil, exec: [], policy: .reject, policies: [], timeout: nil, params: [:], keyParams: [])
        // The fields `Codable` requires, each seen once: name, exec, policy, policies, params, keyParams.
        var required = 0
        let read = object { key, reader in
            let taken: Bool
            switch key {
            case "name": taken = reader.string().map { info.name = $0 } != nil
            case "exec": taken = reader.stringArray().map { info.exec = $0 } != nil
            case "policy": taken = reader.string().flatMap(Policy.init(rawValue:)).map { info.policy = $0 } != nil
            case "policies": taken = reader.policies().map { info.policies = $0 } != nil
            case "params": taken = reader.paramInfos().map { info.params = $0 } != nil
            case "keyParams": taken = reader.stringArray().map { info.keyParams = $0 } != nil
            default: return reader.actionOptional(key, &info)
            }
            required += taken ? 1 : 0
            return taken
        }
        return read && required == 6 ? info : nil
    }

    private mutating func actionOptional(_ key: String, _ info: inout ActionInfo) -> Bool {
        switch key {
        case "description": return into(&info.description) { $0.string() }
        case "timeout": return into(&info.timeout) { $0.integer() }
        case "inFlight": return into(&info.inFlight) { $0.array { $0.run() } }
        case "last": return into(&info.last) { $0.run() }
        case "removed": return into(&info.removed) { $0.bool() }
        case "allowed": return into(&info.allowed) { $0.array { $0.string().flatMap(Permission.init(rawValue:)) } }
        case "schedules": return into(&info.schedules) { $0.stringArray() }
        case "scheduleJitter": return into(&info.scheduleJitter) { $0.integer() }
        case "catchUp": return into(&info.catchUp) { $0.bool() }
        case "queueDepth": return into(&info.queueDepth) { $0.integer().map { Int($0) } }
        case "locks": return into(&info.locks) { $0.array { $0.lockClaim() } }
        case "cooldown": return into(&info.cooldown) { $0.integer() }
        case "force": return into(&info.force) { $0.bool() }
        case "hooks": return into(&info.hooks) { $0.hookNames() }
        case "cooling": return into(&info.cooling) { $0.array { $0.run() } }
        case "paused": return into(&info.paused) { $0.actionPause() }
        case "rateLimit": return into(&info.rateLimit) { $0.rateInfo() }
        case "needs": return into(&info.needs) { $0.stringArray() }
        default: return false
        }
    }

    private mutating func policies() -> [Policy]? { array { $0.string().flatMap(Policy.init(rawValue:)) } }

    private mutating func paramInfos() -> [String: ParamInfo]? {
        var params: [String: ParamInfo] = [:]
        let read = object { name, reader in
            var param = ParamInfo(pattern: nil, default: nil)
            let fields = reader.object { key, reader in
                switch key {
                case "pattern": return reader.into(&param.pattern) { $0.string() }
                case "default": return reader.into(&param.default) { $0.string() }
                case "secret": return reader.into(&param.secret) { $0.bool() }
                default: return false
                }
            }
            params[name] = param
            return fields
        }
        return read ? params : nil
    }

    /// A lock as `Codable` reads it: the limit as written (`LockClaim.init` would raise a 0 to 1).
    private mutating func lockClaim() -> LockClaim? {
        var name: String?, limit: Int?
        let read = object { key, reader in
            switch key {
            case "name": return reader.string().map { name = $0 } != nil
            case "limit": return reader.integer(as: Int.self).map { limit = $0 } != nil
            default: return false
            }
        }
        guard read, let name, let limit else { return nil }
        var claim = LockClaim(name)
        claim.limit = limit
        return claim
    }

    mutating func actionPause() -> ActionPause? {
        var action: String?, by: String?, reason: String?, at: Int64?, until: Int64?, hold: Bool?
        let read = object { key, reader in
            switch key {
            case "action": return reader.into(&action) { $0.string() }
            case "by": return reader.into(&by) { $0.string() }
            case "reason": return reader.into(&reason) { $0.string() }
            case "at": return reader.into(&at) { $0.integer() }
            case "until": return reader.into(&until) { $0.integer() }
            case "hold": return reader.into(&hold) { $0.bool() }
            default: return false
            }
        }
        guard read, let action, let by, let reason, let at else { return nil }
        return ActionPause(action: action, by: by, reason: reason, at: Timestamp(rawValue: at), until: until.map(Timestamp.init(rawValue:)),
                           hold: hold ?? false)
    }

    private mutating func hookNames() -> HookNames? {
        var hooks = HookNames()
        let read = object { key, reader in
            switch key {
            case "failure": return reader.into(&hooks.failure) { $0.string() }
            case "success": return reader.into(&hooks.success) { $0.string() }
            case "change": return reader.into(&hooks.change) { $0.string() }
            case "chain": return reader.into(&hooks.chain) { $0.bool() }
            default: return false
            }
        }
        return read ? hooks : nil
    }
}
