import BatonEngine

/// The fields of a definition's text, read into an `Action` (`ActionCodec.decode`), each by the
/// name `ActionCodec.encode` writes it under.
extension ActionCodec.Decoding {
    typealias Field = (String, inout JSONBytes) -> Bool

    /// The definition's object; nil (and `failure` said) where it is not one.
    func action(_ reader: inout JSONBytes) -> Action? {
        var action = Action(name: "")
        var (version, named) = (Int64?.none, false)
        let read = object(&reader, at: "") { key, reader in
            switch key {
            case "v": return value(reader.integer(), { version = $0 }, key)
            case "name": return value(reader.string(), { action.name = $0; named = true }, key)
            default: return run(key, &reader, &action) || start(key, &reader, &action) || around(key, &reader, &action)
            }
        }
        guard read else { return nil }
        guard version == Int64(ActionCodec.version) else {
            fail("v", version.map { "version \($0), not \(ActionCodec.version)" } ?? "missing")
            return nil
        }
        guard named else { fail("name", "missing"); return nil }
        return action
    }

    /// What runs: exec, cwd, env, the user, umask, limits, timeouts, leftovers, tty, output.
    private func run(_ key: String, _ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        switch key {
        case "exec": return value(Self.strings(&reader), { action.exec = $0 }, key)
        case "cwd": return value(reader.string(), { action.cwd = $0 }, key)
        case "env": return value(reader.stringMap(), { action.env = $0 }, key)
        case "timeout": return value(Self.duration(&reader), { action.timeout = $0 }, key)
        case "killGrace": return value(Self.duration(&reader), { action.killGrace = $0 }, key)
        case "leftovers": return value(raw(&reader, key), { (value: Leftovers) in action.leftovers = value }, key)
        case "runAs": return runAs(&reader, &action)
        case "umask": return value(reader.integer(as: UInt32.self), { action.umask = $0 }, key)
        case "limits": return limits(&reader, &action)
        case "tty": return value(reader.bool(), { action.tty = $0 }, key)
        case "survivesRestart": return value(reader.bool(), { action.survivesRestart = $0 }, key)
        case "outputKeep": return value(reader.integer(), { action.outputKeep = $0 }, key)
        case "artifactsKeep": return value(reader.integer(), { action.artifactsKeep = $0 }, key)
        case "onInterrupt": return value(raw(&reader, key), { (value: InterruptPolicy) in action.onInterrupt = value }, key)
        case "description": return value(reader.string(), { action.description = $0 }, key)
        case "retention": return retention(&reader, &action)
        case "allow": return allow(&reader, &action)
        default: return false
        }
    }

    /// How a trigger meets its runs and when a run starts.
    private func start(_ key: String, _ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        switch key {
        case "policy": return value(raw(&reader, key), { (value: Policy) in action.policy = value }, key)
        case "policies": return value(reader.array { raw(&$0, key) as Policy? }, { action.policies = Set($0) }, key)
        case "retry": return retry(&reader, &action)
        case "params": return params(&reader, &action)
        case "keyParams": return value(Self.strings(&reader), { action.keyParams = $0 }, key)
        case "cooldown": return value(Self.duration(&reader), { action.cooldown = $0 }, key)
        case "debounce": return value(Self.duration(&reader), { action.debounce = $0 }, key)
        case "maxWait": return value(Self.duration(&reader), { action.maxWait = $0 }, key)
        case "queueDepth": return value(reader.integer(as: Int.self), { action.queueDepth = $0 }, key)
        case "pauseAfterFailures": return value(reader.integer(as: Int.self), { action.pauseAfterFailures = $0 }, key)
        case "rateLimit": return rateLimit(&reader, &action)
        case "allowsForce": return value(reader.bool(), { action.allowsForce = $0 }, key)
        case "locks": return locks(&reader, &action)
        case "schedules": return value(Self.strings(&reader), { action.schedules = $0 }, key)
        case "scheduleJitter": return value(Self.duration(&reader), { action.scheduleJitter = $0 }, key)
        case "catchUp": return value(reader.bool(), { action.catchUp = $0 }, key)
        default: return false
        }
    }

    /// What surrounds a run: hooks, needs, approval; else the key is not a field.
    private func around(_ key: String, _ reader: inout JSONBytes, _ action: inout Action) -> Bool {
        switch key {
        case "hooks": return hooks(&reader)
        case "needs":
            let read = reader.array { reader -> Bool? in target(&reader, at: "needs.") { needTargets.append(($0, $1)) } ? true : nil }
            return read != nil || fail(key, "not an array of targets")
        case "approve": return approve(&reader, &action)
        default: return fail(key, "unknown field")
        }
    }
}
