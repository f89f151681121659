import BatonEngine

/// The nested values of a definition's text (`ActionCodec.encode`'s objects), each read whole.
extension ActionCodec.Decoding {
    func retry(_ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        var retry = RetryPolicy.none
        let read = object(&reader, at: "retry.") { key, reader in
            switch key {
            case "attempts": value(reader.integer(as: Int.self), { retry.attempts = $0 }, "retry." + key)
            case "backoff": value(Self.duration(&reader), { retry.backoff = $0 }, "retry." + key)
            case "maxBackoff": value(Self.duration(&reader), { retry.maxBackoff = $0 }, "retry." + key)
            default: fail("retry." + key, "unknown field")
            }
        }
        if read { action.retry = retry }
        return read
    }

    func params(_ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        var params: [String: ParamSpec] = [:]
        let read = object(&reader, at: "params.") { name, reader in
            var spec = ParamSpec()
            let path = "params.\(name)."
            let read = object(&reader, at: path) { key, reader in
                switch key {
                case "pattern":
                    guard let source = reader.string() else { return fail(path + key, "not a string") }
                    do { spec.pattern = try ParamPattern(source) } catch { return fail(path + key, "\(error)") }
                    return true
                case "default": return value(reader.string(), { spec.defaultValue = $0 }, path + key)
                case "secret": return value(reader.bool(), { spec.secret = $0 }, path + key)
                default: return fail(path + key, "unknown field")
                }
            }
            params[name] = spec
            return read
        }
        if read { action.params = params }
        return read
    }

    func retention(_ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        var retention = Retention.Override()
        let read = object(&reader, at: "retention.") { key, reader in
            switch key {
            case "maxAge": value(Self.duration(&reader), { retention.maxAge = $0 }, "retention." + key)
            case "keepFailures": value(Self.duration(&reader), { retention.keepFailures = $0 }, "retention." + key)
            case "maxRunsPerAction": value(reader.integer(as: Int.self), { retention.maxRunsPerAction = $0 }, "retention." + key)
            default: fail("retention." + key, "unknown field")
            }
        }
        if read { action.retention = retention }
        return read
    }

    func allow(_ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        var allow = AccessPolicy.Override()
        let read = object(&reader, at: "allow.") { key, reader in
            let path: WritableKeyPath<AccessPolicy.Override, AccessRule?>
            switch key {
            case "trigger": path = \.trigger
            case "cancel": path = \.cancel
            case "read": path = \.read
            case "pause": path = \.pause
            default: return fail("allow." + key, "unknown field")
            }
            return access(&reader, at: "allow.\(key).") { allow[keyPath: path] = $0 }
        }
        if read { action.allow = allow }
        return read
    }

    func access(_ reader: inout JSONBytes, at path: String, _ set: (AccessRule) -> Void) -> Bool {
        var rule = AccessRule()
        let read = object(&reader, at: path) { key, reader in
            switch key {
            case "users": value(Self.numbers(&reader), { rule.users = Set($0) }, path + key)
            case "groups": value(Self.numbers(&reader), { rule.groups = Set($0) }, path + key)
            case "everyone": value(reader.bool(), { rule.everyone = $0 }, path + key)
            default: fail(path + key, "unknown field")
            }
        }
        if read { set(rule) }
        return read
    }

    func runAs(_ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        var runAs = RunAs(named: "", user: "", uid: 0, gid: 0, groups: [], home: "", shell: "")
        let read = object(&reader, at: "runAs.") { key, reader in
            let path = "runAs." + key
            switch key {
            case "named": return value(reader.string(), { runAs.named = $0 }, path)
            case "groupNamed": return value(reader.string(), { runAs.groupNamed = $0 }, path)
            case "user": return value(reader.string(), { runAs.user = $0 }, path)
            case "uid": return value(reader.integer(as: UInt32.self), { runAs.uid = $0 }, path)
            case "gid": return value(reader.integer(as: UInt32.self), { runAs.gid = $0 }, path)
            case "groups": return value(Self.numbers(&reader), { runAs.groups = $0 }, path)
            case "home": return value(reader.string(), { runAs.home = $0 }, path)
            case "shell": return value(reader.string(), { runAs.shell = $0 }, path)
            default: return fail(path, "unknown field")
            }
        }
        if read { action.runAs = runAs }
        return read
    }

    func limits(_ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        var limits = ResourceLimits()
        let read = object(&reader, at: "limits.") { key, reader in
            switch key {
            case "memory": value(reader.integer(), { limits.memory = $0 }, "limits." + key)
            case "tasks": value(reader.integer(as: Int.self), { limits.tasks = $0 }, "limits." + key)
            case "cpu": value(reader.integer(as: Int.self), { limits.cpu = $0 }, "limits." + key)
            default: fail("limits." + key, "unknown field")
            }
        }
        if read { action.limits = limits }
        return read
    }

    func rateLimit(_ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        var rate = RateLimit(runs: 0, per: .zero)
        let read = object(&reader, at: "rateLimit.") { key, reader in
            let path = "rateLimit." + key
            switch key {
            case "runs": return value(reader.integer(as: Int.self), { rate.runs = $0 }, path)
            case "per": return value(Self.duration(&reader), { rate.per = $0 }, path)
            case "scope": return value(raw(&reader, path), { (value: RateLimit.Scope) in rate.scope = value }, path)
            case "over": return value(raw(&reader, path), { (value: RateLimit.Over) in rate.over = value }, path)
            default: return fail(path, "unknown field")
            }
        }
        if read { action.rateLimit = rate }
        return read
    }

    func locks(_ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        let locks = reader.array { reader -> LockClaim? in
            var (name, limit) = (String?.none, 1)
            let read = object(&reader, at: "locks.") { key, reader in
                switch key {
                case "name": value(reader.string(), { name = $0 }, "locks." + key)
                case "limit": value(reader.integer(as: Int.self), { limit = $0 }, "locks." + key)
                default: fail("locks." + key, "unknown field")
                }
            }
            guard read, let name else { return nil }
            return LockClaim(name, limit: limit)
        }
        guard let locks else { return fail("locks", "not an array of locks") }
        action.locks = locks
        return true
    }

    func hooks(_ reader: inout JSONBytes) -> Bool {
        object(&reader, at: "hooks.") { key, reader in
            switch key {
            case "chain": return value(reader.bool(), { chain = $0 }, "hooks." + key)
            case "targets":
                return object(&reader, at: "hooks.targets.") { name, reader in
                    guard let event = HookEvent(rawValue: name) else { return fail("hooks.targets." + name, "unknown event") }
                    return target(&reader, at: "hooks.targets.\(name).") { hookTargets.append((event, $0, $1)) }
                }
            default: return fail("hooks." + key, "unknown field")
            }
        }
    }

    /// A hook's or a need's target, `{"action": NAME, "params": {...}}`, given to `add`.
    func target(_ reader: inout JSONBytes, at path: String, _ add: (String, [String: String]) -> Void) -> Bool {
        var (name, params) = (String?.none, [String: String]())
        let read = object(&reader, at: path) { key, reader in
            switch key {
            case "action": value(reader.string(), { name = $0 }, path + key)
            case "params": value(reader.stringMap(), { params = $0 }, path + key)
            default: fail(path + key, "unknown field")
            }
        }
        guard read else { return false }
        guard let name else { return fail(path + "action", "missing") }
        add(name, params)
        return true
    }

    func approve(_ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        var rule = ApprovalRule(by: [], approvers: .nobody)
        let read = object(&reader, at: "approve.") { key, reader in
            switch key {
            case "by": return value(Self.strings(&reader), { rule.by = $0 }, "approve." + key)
            case "approvers": return access(&reader, at: "approve.approvers.") { rule.approvers = $0 }
            case "timeout": return value(Self.duration(&reader), { rule.timeout = $0 }, "approve." + key)
            case "allowsSelf": return value(reader.bool(), { rule.allowsSelf = $0 }, "approve." + key)
            default: return fail("approve." + key, "unknown field")
            }
        }
        if read { action.approve = rule }
        return read
    }
}
