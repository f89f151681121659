import BatonCore
import BatonStore
import FoundationEssentials
import Glibc

/// Checks a config tree field by field, collecting a problem for each field that is wrong or unknown.
struct ConfigReader {
    var problems: [ConfigError.Problem] = []
    var warnings: [ConfigError.Problem] = []
    /// Where systemd put the credentials a hook's `secret: { credential }` names.
    var credentialsDirectory = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"]
    /// Whether webhook secrets are read (batond); the schedule generator needs none and has no
    /// credentials at boot, so it checks their shape only.
    var readsSecrets = true
    /// What checks the actions' calendar expressions (`schedule`); nil where systemd is missing.
    var calendarAnalyzer = SystemdCalendar.analyzer
    /// Whether systemd's timers can fire the schedules here (it is the init system).
    var bootedWithSystemd = SystemdCalendar.booted
    /// Whether batond runs as root (then an action without `user` runs as root: `requireUser`).
    var runsAsRoot = geteuid() == 0

    private static let topFields: Set<String> = [
        "socket", "socketMode", "socketGroup", "database", "maxConcurrentRuns", "shutdownGrace", "synchronous", "actions",
        "retention", "allow", "maxConnectionsPerUser", "maxConnections", "requestTimeout", "metrics", "postgres", "host", "lease",
        "processTree", "output", "webhooks", "limits", "requireUser", "search", "secretsKey",
    ]
    private static let actionFields: Set<String> = [
        "exec", "description", "cwd", "env", "timeout", "killGrace", "policy", "policies", "retry", "params",
        "keyParams", "needs", "queue", "pauseAfterFailures", "rateLimit", "cooldown", "debounce", "maxWait", "force", "locks", "schedule", "scheduleJitter", "catchUp", "onInterrupt", "leftovers", "retention", "allow", "user", "group", "umask", "limits", "output", "tty", "on",
        "survivesRestart", "artifacts", "approve",
    ]

    /// The longest action description, in bytes.
    static let maxDescription = 1_024

    mutating func config(_ root: JSONValue) -> Config? {
        guard let fields = object(root, at: "", allowed: Self.topFields) else { return nil }
        var config = Config()
        config.socket = fields["socket"].flatMap { path($0, at: "socket") }
        config.database = fields["database"].flatMap { path($0, at: "database") }
        config.socketGroup = fields["socketGroup"].flatMap { string($0, at: "socketGroup") }
        if let mode = fields["socketMode"].flatMap({ string($0, at: "socketMode") }) {
            if let value = mode_t(mode, radix: 8), value <= 0o777 { config.socketMode = value }
            else { fail("socketMode", "expected an octal mode such as \"0660\", got \(Action.quoted(mode))") }
        }
        if let value = fields["maxConcurrentRuns"] { config.maxConcurrentRuns = integer(value, at: "maxConcurrentRuns", min: 1) ?? 1 }
        if let value = fields["maxConnectionsPerUser"] {
            config.maxConnectionsPerUser = integer(value, at: "maxConnectionsPerUser", min: 1, max: 20_000) ?? 1
        }
        if let value = fields["maxConnections"] {
            config.maxConnections = integer(value, at: "maxConnections", min: 1, max: 1_000_000) ?? 1
            config.maxConnectionsGiven = true
        }
        if let value = fields["requestTimeout"] { config.requestTimeout = positiveDuration(value, at: "requestTimeout") ?? .seconds(10) }
        if let value = fields["shutdownGrace"] { config.shutdownGrace = duration(value, at: "shutdownGrace") ?? .zero }
        if let value = fields["synchronous"] {
            config.synchronous = choice(value, at: "synchronous", Store.Synchronous.allCases.map { $0.rawValue.lowercased() })
                .flatMap { Store.Synchronous(rawValue: $0.uppercased()) } ?? .full
        }
        if let value = fields["metrics"] { config.metricsListen = metrics(value, at: "metrics") }
        if let value = fields["processTree"] {
            config.processTree = choice(value, at: "processTree", ProcessTreeSetting.allCases.map(\.rawValue))
                .flatMap(ProcessTreeSetting.init(rawValue:)) ?? .auto
        }
        config.fleet = fleet(fields)
        if let value = fields["secretsKey"] { config.secretsKey = absolutePath(value, at: "secretsKey") }
        config.search = search(fields["search"])
        if let value = fields["retention"] {
            config.retention = Retention.standard.overridden(by: retention(value, at: "retention"))
        }
        // By default the socket's group may trigger and cancel, and everyone who can connect may read.
        if let name = config.socketGroup {
            if let gid = groupID(name, at: "socketGroup") {
                config.access.trigger = AccessRule(groups: [gid])
                config.access.cancel = AccessRule(groups: [gid])
            }
        }
        // Without socketGroup or an explicit rule, batond takes the group of the socket it serves
        // (batond.socket makes it `baton`): see Config.access(socketGroup:).
        config.triggerFollowsSocket = config.socketGroup == nil
        if let value = fields["allow"] {
            let rules = allow(value, at: "allow")
            config.access.trigger = rules.trigger ?? config.access.trigger
            config.access.cancel = rules.cancel ?? config.access.cancel
            config.access.pause = rules.pause ?? config.access.pause
            if rules.trigger != nil || rules.cancel != nil { config.triggerFollowsSocket = false }
            config.access.read = rules.read ?? config.access.read
        }
        guard let actionsValue = fields["actions"] else {
            fail("actions", "missing: a config needs at least one action")
            return nil
        }
        guard case let .object(actions) = actionsValue else {
            fail("actions", "expected an object of actions by name, got \(actionsValue.kind)")
            return nil
        }
        // The package's config ships with none: batond starts, and runs nothing until one is added.
        if actions.isEmpty { warn("actions", "none: batond runs nothing until one is added (a demo config: /usr/share/doc/baton/examples/baton.json5)") }
        requireUser(fields["requireUser"], actions: actions)
        let keep = fields["output"].flatMap { outputKeep($0, at: "output", allowed: ["keep", "journal"]) } ?? Action.defaultOutputKeep
        if let journal = fields["output"].flatMap({ outputJournal($0) }) { config.journal = journal }
        for (name, value) in actions.sorted(by: { $0.key < $1.key }) {
            if var action = action(name, value) {
                // An action's own `output.keep` over the config's.
                let own: JSONValue? = if case let .object(fields) = value { fields["output"] } else { nil }
                action.outputKeep = own.flatMap { outputKeep($0, at: "actions.\(name).output") } ?? keep
                config.actions.append(action)
            }
        }
        lockLimits(fields["limits"], actions: &config.actions)
        needs(actions, into: &config.actions)
        hooks(actions, into: &config.actions)
        Self.relinkNeeds(&config.actions)
        if let value = fields["webhooks"] { config.webhooks = webhooks(value, actions: config.actions) }
        secretsKeyInFleet(config)
        rateLimitsKeptByRetention(config)
        return config
    }

    mutating func action(_ name: String, _ value: JSONValue) -> Action? {
        let at = "actions.\(name)"
        if !Self.isValidName(name) {
            fail(at, "an action name is 1 to 64 letters, digits, '-', '_' or '.', starting with a letter or digit")
        }
        guard let fields = object(value, at: at, allowed: Self.actionFields) else { return nil }
        var action = Action(name: name)
        if let exec = fields["exec"] {
            let argv = stringArray(exec, at: "\(at).exec") ?? []
            // An array whose strings were each refused has said so already.
            if case let .array(items) = exec, items.isEmpty {
                fail("\(at).exec", "expected a non-empty array of strings (the argv), such as [\"echo\", \"hello\"]")
            }
            action.exec = argv
        } else {
            fail("\(at).exec", "missing: what to run, as an argv array such as [\"echo\", \"hello\"]")
        }
        action.description = fields["description"].flatMap { string($0, at: "\(at).description") }
        if let text = action.description, text.utf8.count > Self.maxDescription {
            fail("\(at).description", "is \(text.utf8.count) bytes; at most \(Self.maxDescription) (a sentence for listings)")
        }
        action.cwd = fields["cwd"].flatMap { path($0, at: "\(at).cwd") }
        if let env = fields["env"] { action.env = stringMap(env, at: "\(at).env") ?? [:] }
        if let timeout = fields["timeout"] { action.timeout = positiveDuration(timeout, at: "\(at).timeout") }
        if let grace = fields["killGrace"] { action.killGrace = duration(grace, at: "\(at).killGrace") ?? .seconds(5) }
        if let policy = fields["policy"] {
            action.policy = choice(policy, at: "\(at).policy", Policy.allCases.map(\.rawValue)).flatMap(Policy.init(rawValue:)) ?? .reject
        }
        if let policies = fields["policies"], case let .array(items) = policies {
            for (index, item) in items.enumerated() {
                if let policy = choice(item, at: "\(at).policies[\(index)]", Policy.allCases.map(\.rawValue)).flatMap(Policy.init(rawValue:)) {
                    action.policies.insert(policy)
                }
            }
        } else if let policies = fields["policies"] {
            fail("\(at).policies", "expected an array of policies, got \(policies.kind)")
        }
        if let retry = fields["retry"] { action.retry = self.retry(retry, at: "\(at).retry") }
        if let params = fields["params"] { action.params = self.params(params, at: "\(at).params") }
        if let keys = fields["keyParams"] {
            action.keyParams = stringArray(keys, at: "\(at).keyParams") ?? []
            for (index, key) in action.keyParams.enumerated() where action.params[key] == nil {
                fail("\(at).keyParams[\(index)]", "\(Action.quoted(key)) is not one of the action's params")
            }
        }
        if let leftovers = fields["leftovers"] {
            action.leftovers = choice(leftovers, at: "\(at).leftovers", ["kill", "keep"]).flatMap(Leftovers.init(rawValue:)) ?? .kill
        }
        if let interrupt = fields["onInterrupt"] {
            action.onInterrupt = choice(interrupt, at: "\(at).onInterrupt", ["fail", "restart"]).flatMap(InterruptPolicy.init(rawValue:)) ?? .fail
        }
        if let value = fields["cooldown"] { action.cooldown = positiveDuration(value, at: "\(at).cooldown") }
        debounce(fields, into: &action, at: at)
        queue(fields, into: &action, at: at)
        if let value = fields["pauseAfterFailures"] { action.pauseAfterFailures = integer(value, at: "\(at).pauseAfterFailures", min: 1, max: 1_000) }
        if let value = fields["rateLimit"] { action.rateLimit = actionRateLimit(value, at: "\(at).rateLimit") }
        if let value = fields["locks"] { action.locks = locks(value, at: "\(at).locks") }
        if let value = fields["approve"] { action.approve = approve(value, at: "\(at).approve") }
        if let value = fields["force"] {
            if case let .bool(flag) = value { action.allowsForce = flag } else { fail("\(at).force", "expected true or false, got \(value.kind)") }
        }
        schedule(fields, into: &action, at: at)
        if let value = fields["tty"] {
            if case let .bool(flag) = value { action.tty = flag } else { fail("\(at).tty", "expected true or false, got \(value.kind)") }
        }
        survivesRestart(fields["survivesRestart"], into: &action, at: at)
        if let value = fields["retention"] { action.retention = retention(value, at: "\(at).retention") }
        if let value = fields["artifacts"] { action.artifactsKeep = artifactsKeep(value, at: "\(at).artifacts") }
        if let value = fields["allow"] { action.allow = allow(value, at: "\(at).allow") }
        if let value = fields["user"] {
            action.runAs = runAs(value, group: fields["group"], at: at)
        } else if fields["group"] != nil {
            fail("\(at).group", "needs user: the process runs as a user and, optionally, another group")
        }
        if let value = fields["limits"] { action.limits = limits(value, at: "\(at).limits") }
        if let value = fields["umask"].flatMap({ string($0, at: "\(at).umask") }) {
            if let mask = UInt32(value, radix: 8), mask <= 0o777 { action.umask = mask }
            else { fail("\(at).umask", "expected an octal mask such as \"0027\", got \(Action.quoted(value))") }
        }
        checkProgram(action, at: at)
        return action
    }

    /// `{ memory: "512M", tasks: 200, cpu: "50%" }`: what the kernel holds each attempt to. Whether
    /// this machine can enforce them is checked once batond knows its cgroups (`Config.refusals`).
    mutating func limits(_ value: JSONValue, at: String) -> ResourceLimits {
        guard let fields = object(value, at: at, allowed: Set(ResourceLimits.Field.allCases.map(\.rawValue))) else { return .init() }
        var limits = ResourceLimits()
        if let memory = fields["memory"].flatMap({ string($0, at: "\(at).memory") }) {
            limits.memory = ResourceLimits.bytes(memory)
            if limits.memory == nil {
                fail("\(at).memory", "expected a size of at least 4K such as \"512M\", \"2G\" or \"800K\" (K, M, G, T: powers of 1024), got \(Action.quoted(memory))")
            }
        }
        if let tasks = fields["tasks"] { limits.tasks = integer(tasks, at: "\(at).tasks", min: 1, max: 4_194_304) }
        if let cpu = fields["cpu"].flatMap({ string($0, at: "\(at).cpu") }) {
            limits.cpu = ResourceLimits.percent(cpu)
            if limits.cpu == nil {
                fail("\(at).cpu", "expected a share of one CPU from 1% to 100000% such as \"50%\" (\"200%\": two CPUs), got \(Action.quoted(cpu))")
            }
        }
        return limits
    }

    /// `{ trigger: { users: ["deploy"], groups: ["ops"] }, cancel: …, read: … }`; `"*"` in users is everyone.
    mutating func allow(_ value: JSONValue, at: String) -> AccessPolicy.Override {
        guard let fields = object(value, at: at, allowed: ["trigger", "cancel", "read", "pause"]) else { return .init() }
        var result = AccessPolicy.Override()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            let here = "\(at).\(name)"
            guard let rule = object(value, at: here, allowed: ["users", "groups"]) else { continue }
            var access = AccessRule()
            for user in rule["users"].flatMap({ stringArray($0, at: "\(here).users") }) ?? [] {
                if user == "*" { access.everyone = true } else if let uid = userID(user, at: "\(here).users") { access.users.insert(uid) }
            }
            for group in rule["groups"].flatMap({ stringArray($0, at: "\(here).groups") }) ?? [] {
                if let gid = groupID(group, at: "\(here).groups") { access.groups.insert(gid) }
            }
            switch name {
            case "trigger": result.trigger = access
            case "cancel": result.cancel = access
            case "pause": result.pause = access
            default: result.read = access
            }
        }
        return result
    }

    /// `user` (and `group`) of an action, looked up now to refuse names that do not exist; each
    /// start looks them up again (`RunAs.resolved`). Only a batond running as root can run a
    /// process as another user.
    mutating func runAs(_ value: JSONValue, group: JSONValue?, at: String) -> RunAs? {
        guard let name = string(value, at: "\(at).user") else { return nil }
        let groupName = group.flatMap { string($0, at: "\(at).group") }
        switch RunAs.lookUp(name, group: groupName) {
        case let .failure(why):
            if case .noGroup = why { fail("\(at).group", "\(why)") } else { fail("\(at).user", "\(why)") }
            return nil
        case let .success(user):
            if user.uid != geteuid() && geteuid() != 0 {
                fail("\(at).user", "batond runs as uid \(geteuid()), not root, so it cannot run processes as \(user.user)")
            }
            return user
        }
    }

    /// A user name or number, as a uid; a problem when no such user exists.
    /// The group principals' uid (`Peer.groupPrincipalUID`, 4294967294) is refused, by number or
    /// by an account's name: a rule naming it would admit every person the team's dashboard serves
    /// as any group.
    mutating func userID(_ name: String, at: String) -> UInt32? {
        let uid = databaseID(name, at: at, kind: "user") { UserDatabase.account($0)?.uid }
        guard uid == Peer.groupPrincipalUID else { return uid }
        fail(at, "\(Action.quoted(name)) is uid \(Peer.groupPrincipalUID), the uid the team's dashboard serves group principals as: "
            + "no rule may name it (name their group instead)")
        return nil
    }

    /// A group name or number, as a gid; a problem when no such group exists.
    mutating func groupID(_ name: String, at: String) -> UInt32? {
        databaseID(name, at: at, kind: "group") { UserDatabase.groupID($0) }
    }

    mutating func databaseID(_ name: String, at: String, kind: String, lookup: (String) -> UInt32?) -> UInt32? {
        if let id = UInt32(name) { return id }
        guard let id = lookup(name) else {
            fail(at, "no \(kind) named \(Action.quoted(name))")
            return nil
        }
        return id
    }

    mutating func retention(_ value: JSONValue, at: String) -> Retention.Override {
        guard let fields = object(value, at: at, allowed: ["maxAge", "keepFailures", "maxRunsPerAction"]) else { return .init() }
        var retention = Retention.Override()
        if let maxAge = fields["maxAge"] { retention.maxAge = duration(maxAge, at: "\(at).maxAge") }
        if let keep = fields["keepFailures"] { retention.keepFailures = duration(keep, at: "\(at).keepFailures") }
        if let count = fields["maxRunsPerAction"] {
            retention.maxRunsPerAction = integer(count, at: "\(at).maxRunsPerAction", min: 1, max: 1_000_000_000)
        }
        return retention
    }

    mutating func retry(_ value: JSONValue, at: String) -> RetryPolicy {
        guard let fields = object(value, at: at, allowed: ["attempts", "backoff", "maxBackoff"]) else { return .none }
        var retry = RetryPolicy(attempts: 0)
        if let attempts = fields["attempts"] { retry.attempts = integer(attempts, at: "\(at).attempts", min: 0, max: 100) ?? 0 }
        if let backoff = fields["backoff"] { retry.backoff = duration(backoff, at: "\(at).backoff") ?? .seconds(1) }
        if let maxBackoff = fields["maxBackoff"] { retry.maxBackoff = duration(maxBackoff, at: "\(at).maxBackoff") ?? .seconds(60) }
        return retry
    }
}
