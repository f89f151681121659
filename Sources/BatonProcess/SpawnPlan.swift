import BatonEngine
import BatonRuntime
import Glibc

/// What every attempt of one action is spawned with, whatever its run: its `exec` argv and the
/// fixed part of its environment as C strings, and its cgroups' `LimitPlan`. A spawner thread
/// makes it at the action's first attempt and keeps it in its own state (`SpawnerState`: no
/// lock) while the action's config and the runner stay the same; a run adds only its own
/// variables. Built per run, the environment's dictionaries, the `NAME=VALUE` strings and a
/// `strdup` per string were about a third of a spawner's instructions per run (issue 39).
final class SpawnPlan {
    /// What it was made from: another plan is made when any of it changes.
    struct Inputs: Equatable {
        var name: String
        var exec: [String]
        var env: [String: String]
        var runAs: RunAs?
        var instance: String?
        var inherited: [String: String]
        var limits: ResourceLimits
        var support: LimitSupport?
    }

    let inputs: Inputs
    /// `exec`, NUL-terminated.
    let argv: CStrings
    /// The environment every attempt of the action gets (`ExecRunner.fixedEnvironment`), as `NAME=VALUE`.
    let env: CStrings
    /// Those of its variables a run may set again (Baton's own names), by their place in `env`.
    let overridable: [(index: Int, name: String)]
    /// All its variables' names, by their place in `env`: for a run's own name that is not Baton's.
    let names: [String]
    /// The spawn of its thread that last used it (`SpawnerState`: only that thread touches it).
    var used = 0
    /// The attempts' cgroups (nil without cgroup tracking).
    let limitPlan: LimitPlan?
    /// Its cgroup v1 groups (a hybrid host's memory group for every attempt), their paths' bytes made once.
    let v1Groups: [AttemptCgroupV1.Template]

    init(_ inputs: Inputs, fixed: [String: String]) {
        self.inputs = inputs
        argv = CStrings(inputs.exec.map { ($0, nil) })
        let variables: [(name: String, value: String?)] = fixed.map { ($0.key, $0.value) }
        env = CStrings(variables)
        overridable = variables.enumerated().compactMap { $1.name.hasPrefix("BATON_") ? ($0, $1.name) : nil }
        names = variables.map(\.name)
        limitPlan = inputs.support.map { LimitPlan.make(inputs.limits, support: $0) }
        v1Groups = limitPlan?.v1.map(AttemptCgroupV1.Template.init) ?? []
    }

    /// Calls `body` with the argv (`prefix`, then `exec`) and the environment (this plan's, less
    /// the variables `own` sets again or unsets (a nil value), then `own`), both NULL-terminated.
    func withPointers<R>(prefix: [String], own: [(name: String, value: String?)],
                         _ body: (UnsafePointer<UnsafePointer<CChar>?>, UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let head = prefix.isEmpty ? nil : CStrings(prefix.map { ($0, nil) })
        // Of a name set twice (two params upper-cased alike) the last; an unset one not at all. A
        // run of many variables (a hook's params and the run's) looks the last place up by name.
        let last = own.count > 16 ? Dictionary(own.indices.map { (own[$0].name, $0) }, uniquingKeysWith: { $1 }) : nil
        let mine = CStrings(own) { index in
            guard own[index].value != nil else { return false }
            if let last { return last[own[index].name] == index }
            return !own[(index + 1)...].contains { $0.name == own[index].name }
        }
        var argv: [UnsafePointer<CChar>?] = []
        argv.reserveCapacity((head?.pointers.count ?? 0) + self.argv.pointers.count)
        if let head { argv += head.pointers[..<(head.pointers.count - 1)] }
        argv += self.argv.pointers
        var envp: [UnsafePointer<CChar>?] = []
        envp.reserveCapacity(env.pointers.count + mine.pointers.count)
        var skipped: [Int] = []
        for (index, name) in overridable where own.contains(where: { $0.name == name }) { skipped.append(index) }
        // Every own name is Baton's today; one that is not (a TMPDIR) still replaces the fixed one.
        for (name, _) in own where !name.hasPrefix("BATON_") {
            if let index = names.firstIndex(of: name), !skipped.contains(index) { skipped.append(index) }
        }
        if skipped.isEmpty {
            envp += env.pointers[..<(env.pointers.count - 1)]
        } else {
            for index in 0..<(env.pointers.count - 1) where !skipped.contains(index) { envp.append(env.pointers[index]) }
        }
        envp += mine.pointers
        return withExtendedLifetime((head, mine)) {
            argv.withUnsafeBufferPointer { argv in envp.withUnsafeBufferPointer { body(argv.baseAddress!, $0.baseAddress!) } }
        }
    }
}

/// A spawner thread's own state (`SpawnerPool`): the plans of the actions it spawned, by name.
struct SpawnerState {
    /// Spawns after which a plan not used since goes (a removed or renamed action's).
    static let sweep = 1_024
    var plans: [String: SpawnPlan] = [:]
    /// This thread's spawns so far.
    var spawns = 0

    /// The plan for `inputs`, made again when they changed (a config reload) and kept. Every
    /// `sweep` spawns the plans unused since the last sweep go: the thread keeps the plans of
    /// the actions it spawned in its last `2 × sweep` spawns at most, not those of actions gone.
    mutating func plan(_ inputs: SpawnPlan.Inputs, fixed: () -> [String: String]) -> SpawnPlan {
        spawns += 1
        if spawns % Self.sweep == 0 {
            let since = spawns - Self.sweep
            plans = plans.filter { $0.value.used > since }
        }
        if let plan = plans[inputs.name], plan.inputs == inputs {
            plan.used = spawns
            return plan
        }
        let plan = SpawnPlan(inputs, fixed: fixed())
        plan.used = spawns
        plans[inputs.name] = plan
        return plan
    }
}

/// NUL-terminated C strings in one allocation (`NAME=VALUE` where a value is given), and the
/// pointers to them, NULL-terminated (an argv or an envp), valid while this lives.
final class CStrings {
    private let bytes: UnsafeMutableBufferPointer<CChar>
    let pointers: [UnsafePointer<CChar>?]

    /// The strings at the places `included` keeps.
    init(_ strings: [(name: String, value: String?)], where included: (Int) -> Bool = { _ in true }) {
        var size = 0, count = 0
        for index in strings.indices where included(index) {
            size += strings[index].name.utf8.count + (strings[index].value.map { $0.utf8.count + 1 } ?? 0) + 1
            count += 1
        }
        bytes = .allocate(capacity: max(size, 1))
        var offset = 0
        var pointers: [UnsafePointer<CChar>?] = []
        pointers.reserveCapacity(count + 1)
        for index in strings.indices where included(index) {
            let (name, value) = strings[index]
            pointers.append(UnsafePointer(bytes.baseAddress! + offset))
            offset = Self.copy(name, to: bytes, at: offset)
            if let value {
                bytes[offset] = 0x3D // "="
                offset = Self.copy(value, to: bytes, at: offset + 1)
            }
            bytes[offset] = 0
            offset += 1
        }
        pointers.append(nil)
        self.pointers = pointers
    }

    deinit { bytes.deallocate() }

    private static func copy(_ string: String, to bytes: UnsafeMutableBufferPointer<CChar>, at offset: Int) -> Int {
        var string = string
        return string.withUTF8 { utf8 in
            guard let base = utf8.baseAddress, utf8.count > 0 else { return offset }
            UnsafeMutableRawPointer(bytes.baseAddress! + offset).copyMemory(from: base, byteCount: utf8.count)
            return offset + utf8.count
        }
    }
}
