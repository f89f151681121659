import BatonCore
@testable import BatonFleet
import BatonWire
import Testing

/// What a host remembers of the stored definitions: bounded, and only a wasted statement or read when it forgets.
@Suite("FleetRunDefinitions.Cache: fingerprints written and definitions read, each bounded")
struct FleetRunDefinitionsTests {
    @Test("a fingerprint written since the start is not written again; past the capacity the set starts over")
    func written() {
        var cache = FleetRunDefinitions.Cache()
        #expect(cache.needsWrite("a"))
        cache.wrote(["a"])
        #expect(!cache.needsWrite("a"))
        cache.wrote((1..<FleetRunDefinitions.Cache.capacity).map { "f\($0)" })
        #expect(cache.written.count == FleetRunDefinitions.Cache.capacity && !cache.needsWrite("a"))
        cache.wrote(["b"])
        #expect(cache.written == ["b"] && cache.needsWrite("a"), "emptied, then the new one")
    }

    @Test("a row the transaction in progress inserted is not inserted again in it; written once it commits, forgotten if it does not")
    func pending() {
        var cache = FleetRunDefinitions.Cache()
        cache.inserting("a")
        #expect(!cache.needsWrite("a"), "a second run of it in the same transaction (a hook's) inserts nothing")
        cache.ended(committed: false)
        #expect(cache.needsWrite("a") && cache.written.isEmpty, "rolled back: the next transaction inserts it")
        cache.inserting("a")
        cache.ended(committed: true)
        #expect(!cache.needsWrite("a") && cache.written == ["a"] && cache.pending.isEmpty)
    }

    @Test("definitions read are kept by fingerprint, at most the capacity")
    func read() {
        var cache = FleetRunDefinitions.Cache()
        for index in 0..<FleetRunDefinitions.Cache.capacity { cache.remember(.action(Action(name: "x\(index)")), as: "f\(index)") }
        let capacity = FleetRunDefinitions.Cache.capacity
        #expect((0..<capacity).allSatisfy { cache.known("f\($0)", loaded: 0) != nil } && cache.known("f0", loaded: 0)?.action?.name == "x0")
        cache.remember(.refused("no"), as: "g")
        #expect(cache.known("f0", loaded: 0) == nil && cache.known("f1", loaded: 0) == nil, "emptied past the capacity")
        #expect(cache.known("g", loaded: 0) != nil && cache.known("g", loaded: 0)?.action == nil, "a refusal is remembered too (logged once)")
    }

    @Test("definitions looked up are answered again only while what the conductor loaded is unchanged: a reload or a forgotten definition empties them")
    func knownUntilReload() {
        var cache = FleetRunDefinitions.Cache()
        #expect(cache.known("f", loaded: 0) == nil)
        cache.remember(.refused("not configured"), as: "f")
        cache.remember(.action(Action(name: "x")), as: "g")
        #expect(cache.known("f", loaded: 0)?.action == nil && cache.known("f", loaded: 0) != nil)
        #expect(cache.known("g", loaded: 0)?.action?.name == "x")
        #expect(cache.known("f", loaded: 1) == nil && cache.known("g", loaded: 1) == nil, "a reload: both looked up again")
        cache.remember(.action(Action(name: "y")), as: "f")
        #expect(cache.known("f", loaded: 1)?.action?.name == "y")
    }

    @Test("the insert is idempotent and carries the codec's text under the given revision and the name, env values as digests (review M5)")
    func insert() throws {
        let action = Action(name: "deploy", exec: ["true"], env: ["TOKEN": "hunter2-secret"])
        let statement = try FleetRunDefinitions.insert(action, revision: try action.revision())
        #expect(statement.sql.contains("INSERT INTO revisions") && statement.sql.contains("ON CONFLICT (revision, name) DO NOTHING"))
        #expect(statement.parameters == [try action.revision(), "deploy", ActionCodec.encode(try action.storedForm())])
        let text = try #require(statement.parameters[2])
        #expect(!text.contains("hunter2"), "an env value in clear in the row: \(text)")
        // sha256("hunter2-secret"), as sha256sum says.
        #expect(try action.storedForm().env == ["TOKEN": "sha256:" + SHA256.hex(Array("hunter2-secret".utf8))])
        #expect(try action.storedForm().storedForm() == action.storedForm(), "made twice, the same form")
        #expect(Action.isDigest("sha256:" + String(repeating: "a", count: 64)) && !Action.isDigest("sha256:" + String(repeating: "A", count: 64)))
    }

    @Test("two actions defined alike under two names share a fingerprint, not a definition")
    func keyedByName() {
        let (one, two) = (Action(name: "one", exec: ["true"]), Action(name: "two", exec: ["true"]))
        #expect(one.fingerprint == two.fingerprint, "the fingerprint leaves the name out")
        #expect(FleetRunDefinitions.key(one.name, one.fingerprint) != FleetRunDefinitions.key(two.name, two.fingerprint))
    }

    @Test("a revision is the whole definition: 32 hex digits, the same for the same definition, another where anything differs, hooks, locks, limits and env values included (which the fingerprint leaves out or keeps as a digest)")
    func revisions() throws {
        let revision = try Self.own().revision()
        #expect(revision.count == 32 && revision.allSatisfy(\.isHexDigit))
        #expect(try Self.own().revision() == revision)
        let changes: [(String, (inout Action) -> Void)] = [
            ("hooks", { $0.hooks.targets[.failure] = HookTarget(action: Action(name: "alert", exec: ["true"]), params: [:]) }),
            ("locks", { $0.locks = [LockClaim("db", limit: 1)] }), ("limits", { $0.limits.memory = 1 << 20 }),
            ("env", { $0.env["TOKEN"] = "y" }), ("outputKeep", { $0.outputKeep = 1 }), ("pauseAfterFailures", { $0.pauseAfterFailures = 3 }),
        ]
        for (field, change) in changes {
            var other = Self.own()
            change(&other)
            #expect(try other.revision() != revision, "\(field)")
        }
        // Pinned: a change to the codec or to what a revision covers changes every revision, so a
        // fleet's hosts then read each other's runs' rows; make it on purpose (a `v` bump, said in schema.md).
        #expect(revision == "d29e31042172d057b28de040a5c2f81f", "Self.own()'s revision")
        // What each host resolves for itself is left out: the user's ids, groups, home and shell; allow's ids.
        var here = Self.own(), there = Self.own()
        here.runAs = RunAs(named: "deploy", user: "deploy", uid: 1001, gid: 1001, groups: [27, 1001], home: "/home/deploy", shell: "/bin/sh")
        there.runAs = RunAs(named: "deploy", user: "deploy", uid: 2002, gid: 2002, groups: [2002], home: "/srv/deploy", shell: "/bin/bash")
        #expect(try here.revision() == there.revision())
        there.runAs?.named = "other"
        #expect(try here.revision() != there.revision(), "the user's name is the definition's")
        // Each connection computes it once per action as loaded, several per name; another action of the name, another revision.
        var cache = FleetRunDefinitions.Cache()
        var locked = Self.own()
        locked.locks = [LockClaim("db", limit: 1)]
        #expect(try cache.revision(of: Self.own()) == revision && cache.revision(of: locked) == locked.revision())
        #expect(try cache.revision(of: Self.own()) == revision && cache.revisions["deploy"]?.count == 2)
        let ref = DefinitionRef(["0123456789abcdef", revision])
        #expect(ref.key("deploy") == FleetRunDefinitions.key("deploy", revision) && DefinitionRef(["0123456789abcdef", nil]).key("deploy")
                == FleetRunDefinitions.key("deploy", "0123456789abcdef"))
    }

    /// A host's own `deploy`, and a stored definition that differs from it only in what a database writer may decide.
    static func own() -> Action {
        var action = Action(name: "deploy", exec: ["sh", "-c", "echo A"], env: ["TOKEN": "x"], timeout: .seconds(60))
        action.approve = ApprovalRule(by: ["user:bob"], approvers: AccessRule(users: [1002]), timeout: .seconds(3600))
        action.hooks.targets[.awaiting] = HookTarget(action: Action(name: "chat", exec: ["true"]), params: [:])
        return action
    }

    @Test("a stored definition deciding otherwise (approve, locks, retry, policy, queueDepth, onInterrupt) runs this host's process, decided as stored")
    func decidingFields() throws {
        var stored = Self.own()
        stored.approve = ApprovalRule(by: ["user:alice"], approvers: AccessRule(users: [1001]), timeout: .seconds(60))
        stored.locks = [LockClaim("db", limit: 1)]
        stored.retry = RetryPolicy(attempts: 2)
        stored.policy = .queue
        stored.queueDepth = 3
        stored.onInterrupt = .restart
        stored.cooldown = .seconds(9)
        #expect(Self.own().runsAsStored(try stored.storedForm()), "as a row keeps it")
        #expect(Self.own().runsAsStored(stored), "as lookUp gives it")
        let decided = Self.own().deciding(as: stored)
        #expect(decided.approve == stored.approve && decided.locks == stored.locks && decided.retry == stored.retry)
        #expect(decided.policy == .queue && decided.queueDepth == 3 && decided.onInterrupt == .restart && decided.cooldown == .seconds(9))
        #expect(decided.exec == Self.own().exec && decided.env == Self.own().env)
    }

    @Test("a stored definition whose process differs in any of exec, env, cwd, timeout, umask, tty, limits, leftovers is not this host's")
    func processFields() throws {
        let changes: [(String, (inout Action) -> Void)] = [
            ("exec", { $0.exec = ["sh", "-c", "echo PWNED"] }), ("env", { $0.env["TOKEN"] = "y" }), ("cwd", { $0.cwd = "/tmp" }),
            ("timeout", { $0.timeout = nil }), ("umask", { $0.umask = 0 }), ("tty", { $0.tty = true }),
            ("limits", { $0.limits.memory = 1 << 20 }), ("leftovers", { $0.leftovers = .keep }), ("killGrace", { $0.killGrace = .seconds(1) }),
            ("survivesRestart", { $0.survivesRestart = false }), ("outputKeep", { $0.outputKeep = 1 }), ("name", { $0.name = "other" }),
        ]
        for (field, change) in changes {
            var stored = Self.own()
            change(&stored)
            #expect(!Self.own().runsAsStored(stored), "\(field)")
            #expect(!Self.own().runsAsStored(try stored.storedForm()), "\(field), as a row keeps it")
        }
    }

    @Test("a waiting run's wait is waived (the engine's rule, one machine's and a fleet's) by a config that is its definition with approve (and its awaiting hook) removed, nothing else changed; by no other (review s35 H1)")
    func waives() {
        // The run's definition as `lookUp` gives it: this host's process, the stored decision fields (its approve among them).
        let definition = Self.own().deciding(as: Self.own())
        let reloads: [(String, (inout Action) -> Void, Bool)] = [
            ("approve removed, same process", { $0.approve = nil }, true),
            ("approve and its awaiting hook removed", { $0.approve = nil; $0.hooks.targets[.awaiting] = nil }, true),
            ("approve removed, the description edited", { $0.approve = nil; $0.description = "no more sign-off" }, true),
            ("approve removed, a schedule added", { $0.approve = nil; $0.schedules = ["daily"] }, false),
            ("approve removed, a lock added (the run, unapproved, would start without it)", { $0.approve = nil; $0.locks = [LockClaim("db", limit: 1)] }, false),
            ("approve removed, a need added", { $0.approve = nil; $0.needs = [NeedTarget(action: Action(name: "test", exec: ["true"]), params: [:])] }, false),
            ("approve removed, the awaiting hook's action reloaded too (compared by name)",
             { $0.approve = nil; $0.hooks.targets[.awaiting] = HookTarget(action: Action(name: "chat", exec: ["false"]), params: [:]) }, true),
            ("approve removed, a hook's params changed", { $0.approve = nil; $0.hooks.targets[.awaiting] = nil
                $0.hooks.targets[.failure] = HookTarget(action: Action(name: "chat", exec: ["true"]), params: ["p": "1"]) }, false),
            ("approve removed, a rate limit added", { $0.approve = nil; $0.rateLimit = RateLimit(runs: 1, per: .seconds(60)) }, false),
            ("approve kept", { _ in }, false),
            ("approve changed", { $0.approve = ApprovalRule(by: ["user:carol"], approvers: AccessRule(users: [1003]), timeout: nil) }, false),
            ("approve removed, exec changed", { $0.approve = nil; $0.exec = ["sh", "-c", "echo B"] }, false),
            ("approve removed, env changed", { $0.approve = nil; $0.env["TOKEN"] = "y" }, false),
            ("approve removed, another action's name", { $0.approve = nil; $0.name = "other" }, false),
        ]
        for (reload, change, waived) in reloads {
            var config = Self.own()
            change(&config)
            #expect(config.waives(definition) == waived, "\(reload)")
        }
    }
}
