import BatonEngine
/// A run as `FastResponse` reads it: every field `RunSnapshot.write(to:)` writes.
extension JSONBytes {
    mutating func run() -> RunSnapshot? {
        var snapshot = RunSnapshot(id: 0, action: "", key: "", phase: .queued, policy: .reject, params: [:], trigger: nil,
                                   queuedAt: Timestamp(rawValue: 0))
        // The fields `Codable` requires, each seen once: id, action, key, phase, policy, params, queuedAt, attempts.
        var required = 0
        // Read into the fields, one new storage for the whole run (a setter makes one a field).
        let read = snapshot.update { run in object { key, reader in
            let taken: Bool
            switch key {
            case "id": taken = reader.integer().map { run.id = $0 } != nil
            case "action": taken = reader.string().map { run.action = $0 } != nil
            case "key": taken = reader.string().map { run.key = $0 } != nil
            case "phase": taken = reader.string().flatMap(Phase.init(rawValue:)).map { run.phase = $0 } != nil
            case "policy": taken = reader.string().flatMap(Policy.init(rawValue:)).map { run.policy = $0 } != nil
            case "params": taken = reader.stringMap().map { run.params = $0 } != nil
            case "queuedAt": taken = reader.timestamp().map { run.queuedAt = $0 } != nil
            case "attempts": taken = reader.integer(as: Int.self).map { run.attempts = $0 } != nil
            default: return reader.runOptional(key, &run)
            }
            required += taken ? 1 : 0
            return taken
        } }
        return read && required == 8 ? snapshot : nil
    }

    private mutating func runOptional(_ key: String, _ run: inout RunSnapshot.Fields) -> Bool {
        switch key {
        case "trigger": return into(&run.trigger) { $0.peer() }
        case "startedAt": return into(&run.startedAt) { $0.timestamp() }
        case "endedAt": return into(&run.endedAt) { $0.timestamp() }
        case "exitCode": return into(&run.exitCode) { $0.integer(as: Int32.self) }
        case "signal": return into(&run.signal) { $0.integer(as: Int32.self) }
        case "reason": return into(&run.reason) { $0.string() }
        case "error": return into(&run.error) { $0.string() }
        case "cancelledBy": return into(&run.cancelledBy) { $0.integer(as: UInt32.self) }
        case "progress": return into(&run.progress) { $0.progress() }
        case "estimate": return into(&run.estimate) { $0.integer() }
        case "host": return into(&run.host) { $0.string() }
        case "seq": return into(&run.seq) { $0.integer(as: Int.self) }
        default: return runAccounting(key, &run)
        }
    }

    private mutating func runAccounting(_ key: String, _ run: inout RunSnapshot.Fields) -> Bool {
        switch key {
        case "cpuUser": return into(&run.cpuUser) { $0.integer() }
        case "cpuSystem": return into(&run.cpuSystem) { $0.integer() }
        case "memoryPeak": return into(&run.memoryPeak) { $0.integer() }
        case "via": return into(&run.via) { $0.string() }
        case "slot": return into(&run.slot) { $0.timestamp() }
        case "hook": return into(&run.hook) { $0.hookCause() }
        case "waiting": return into(&run.waiting) { $0.lockWait() }
        case "debounceUntil": return into(&run.debounceUntil) { $0.timestamp() }
        case "rateUntil": return into(&run.rateUntil) { $0.timestamp() }
        case "coolsUntil": return into(&run.coolsUntil) { $0.timestamp() }
        case "line": return into(&run.line) { $0.integer().map { Int($0) } }
        case "needs": return into(&run.needs) { $0.array { $0.neededRun() } }
        case "neededBy": return into(&run.neededBy) { $0.array { $0.neededRun() } }
        case "approval": return into(&run.approval) { $0.approval() }
        default: return false
        }
    }

    mutating func peer() -> Peer? {
        var uid: UInt32?, gid: UInt32?, pid: Int32?
        let read = object { key, reader in
            switch key {
            case "uid": return reader.integer(as: UInt32.self).map { uid = $0 } != nil
            case "gid": return reader.integer(as: UInt32.self).map { gid = $0 } != nil
            case "pid": return reader.integer(as: Int32.self).map { pid = $0 } != nil
            default: return false
            }
        }
        guard read, let uid, let gid, let pid else { return nil }
        return Peer(uid: uid, gid: gid, pid: pid)
    }

    mutating func progress() -> Progress? {
        var progress = Progress()
        let read = object { key, reader in
            switch key {
            case "fraction": return reader.into(&progress.fraction) { $0.double() }
            case "completed": return reader.into(&progress.completed) { $0.integer(as: Int.self) }
            case "total": return reader.into(&progress.total) { $0.integer(as: Int.self) }
            case "message": return reader.into(&progress.message) { $0.string() }
            default: return false
            }
        }
        return read ? progress : nil
    }

    mutating func hookCause() -> HookCause? {
        var run: Int64?, action: String?, event: HookEvent?
        let read = object { key, reader in
            switch key {
            case "run": return reader.integer().map { run = $0 } != nil
            case "action": return reader.string().map { action = $0 } != nil
            case "event": return reader.string().flatMap(HookEvent.init(rawValue:)).map { event = $0 } != nil
            default: return false
            }
        }
        guard read, let run, let action, let event else { return nil }
        return HookCause(run: run, action: action, event: event)
    }

    mutating func neededRun() -> NeededRun? {
        var action: String?, run: Int64?, phase: Phase?, reason: String?
        let read = object { key, reader in
            switch key {
            case "action": return reader.string().map { action = $0 } != nil
            case "run": return reader.integer().map { run = $0 } != nil
            case "phase": return reader.string().flatMap(Phase.init(rawValue:)).map { phase = $0 } != nil
            case "reason": return reader.into(&reason) { $0.string() }
            default: return false
            }
        }
        guard read, let action, let run, let phase else { return nil }
        return NeededRun(action: action, run: run, phase: phase, reason: reason)
    }

    mutating func approval() -> ApprovalState? {
        var state = ApprovalState(by: [], until: nil)
        var by: [String]?
        let read = object { key, reader in
            switch key {
            case "by": return reader.stringArray().map { by = $0 } != nil
            case "until": return reader.into(&state.until) { $0.timestamp() }
            case "verdict": return reader.string().flatMap(ApprovalState.Verdict.init(rawValue:)).map { state.verdict = $0 } != nil
            case "decidedBy": return reader.into(&state.decidedBy) { $0.string() }
            case "decidedAt": return reader.into(&state.decidedAt) { $0.timestamp() }
            case "reason": return reader.into(&state.reason) { $0.string() }
            default: return false
            }
        }
        guard read, let by else { return nil }
        state.by = by
        return state
    }

    mutating func lockWait() -> LockWait? {
        var lock: String?, limit: Int?, holders: [LockWait.Holder]?, ahead: [LockWait.Holder]?
        let read = object { key, reader in
            switch key {
            case "lock": return reader.string().map { lock = $0 } != nil
            case "limit": return reader.integer(as: Int.self).map { limit = $0 } != nil
            case "holders": return reader.array { $0.lockHolder() }.map { holders = $0 } != nil
            case "ahead": return reader.array { $0.lockHolder() }.map { ahead = $0 } != nil
            default: return false
            }
        }
        guard read, let lock, let limit, let holders, let ahead else { return nil }
        return LockWait(lock: lock, limit: limit, holders: holders, ahead: ahead)
    }

    private mutating func lockHolder() -> LockWait.Holder? {
        var run: Int64?, action: String?
        let read = object { key, reader in
            switch key {
            case "run": return reader.integer().map { run = $0 } != nil
            case "action": return reader.string().map { action = $0 } != nil
            default: return false
            }
        }
        guard read, let run, let action else { return nil }
        return LockWait.Holder(run: run, action: action)
    }
}
