import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

extension ExecRunner {
    /// Everything an attempt's start does that blocks, on a spawner thread: the run-as user
    /// looked up, the hook output file, the pipes, the cgroup, the spawn, the leader's identity.
    /// On a failure nothing is left behind. `state` is the spawner thread's (its actions' plans).
    func make(_ job: Job, _ state: inout SpawnerState) -> Result<ProcessAttempt.Spawned, SpawnFailure> {
        onSpawner?()
        var job = job
        if let configured = job.action.runAs {
            // The name is the identity: looked up at each start, so that a uid given to another
            // user since the config was read never runs this action.
            switch configured.resolved() {
            case let .success(current): job.action.runAs = current
            case let .failure(why):
                return .failure(SpawnFailure(message: "cannot run as \(Action.quoted(configured.named)): \(why) now "
                    + "(it was uid \(configured.uid) when the config was read)"))
            }
        }
        var hookOutput: String?
        if let hook = job.hook {
            switch writeHookOutput(hook, job) {
            case let .success(path): hookOutput = path
            case let .failure(why): return .failure(SpawnFailure(message: why.message))
            }
        }
        var prefix: [String] = [], shimDirectory: String?, shimDisk: String?, artifacts: ArtifactWork?
        switch makeArtifacts(job) {
        case let .success(work): artifacts = work
        case let .failure(why):
            if let hookOutput { unlink(hookOutput) }
            return .failure(why)
        }
        if let shim = shim(for: job) {
            switch shimmed(job.action.exec, job, shim) {
            case let .success(made?): (prefix, shimDirectory, shimDisk) = (made.prefix, made.directory, made.disk)
            case .success(nil): break
            case let .failure(why):
                if let hookOutput { unlink(hookOutput) }
                if let artifacts { ArtifactTree.remove(artifacts.path) }
                return .failure(why)
            }
        }
        let plan = state.plan(planInputs(job)) { fixedEnvironment(job.action, instance: job.instance) }
        // Baton's own variables, after the action's `env`, which cannot set them.
        var own = ownVariables(job, artifacts: artifacts?.path)
        own.append(("BATON_HOOK_OUTPUT", hookOutput))
        var made = spawnLeader(job, plan, prefix: prefix, own: own, hookOutput: hookOutput)
        if case .failure = made {
            if let hookOutput { unlink(hookOutput) }
            if let shimDirectory { ShimRecord.remove(shimDirectory) }
            if let artifacts { ArtifactTree.remove(artifacts.path) }
        }
        if case var .success(spawned) = made {
            spawned.shimDirectory = shimDirectory
            spawned.shimDisk = shimDisk
            spawned.artifacts = artifacts
            made = .success(spawned)
        }
        return made
    }

    /// What an action's `SpawnPlan` is made from.
    func planInputs(_ job: Job) -> SpawnPlan.Inputs {
        var support: LimitSupport?
        if case let .cgroup(hierarchy) = tracking { support = hierarchy.limits }
        return SpawnPlan.Inputs(name: job.action.name, exec: job.action.exec, env: job.action.env, runAs: job.action.runAs,
                                instance: job.instance, inherited: inherited, limits: job.action.limits, support: support)
    }

    /// The pipes, the cgroup and the process: argv `prefix` (the shim's) then the action's `exec`,
    /// the plan's environment with the run's `own` variables (`BATON_HOOK_OUTPUT` among them).
    private func spawnLeader(_ job: Job, _ plan: SpawnPlan, prefix: [String], own: [(name: String, value: String?)],
                             hookOutput: String?) -> Result<ProcessAttempt.Spawned, SpawnFailure> {
        // With `tty`, stdout and stderr are one pseudo-terminal (its master read as stdout), and err stays [-1, -1].
        var out: [Int32] = [-1, -1], err: [Int32] = [-1, -1], prog: [Int32] = [-1, -1]
        var made: Int32 = 0
        if job.action.tty {
            var (master, slave): (Int32, Int32) = (-1, -1)
            made = baton_openpty(&master, &slave)
            out = [master, slave]
        } else if baton_pipe(&out) != 0 || baton_pipe(&err) != 0 {
            made = errno
        }
        guard made == 0, baton_pipe(&prog) == 0 else {
            let message = "cannot create \(job.action.tty ? "a pseudo-terminal or pipe" : "pipes"): \(String(cString: strerror(made == 0 ? errno : made)))"
            for fd in out + err + prog where fd >= 0 { close(fd) }
            return .failure(SpawnFailure(message: message))
        }
        // The loop reads its ends without blocking; the process's ends stay blocking. Fresh ends
        // have no status flag F_SETFL could change but O_NONBLOCK: no F_GETFL needed.
        for fd in [out[0], err[0], prog[0]] where fd >= 0 { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
        let (stdoutEnd, stderrEnd) = (out[1], err[1] >= 0 ? err[1] : out[1])
        var cgroup: AttemptCgroup?
        if case let .cgroup(hierarchy) = tracking {
            ProcessAttempt.leaders.withLock { _ = $0.hierarchies.insert(hierarchy.directory) }
            let name = CgroupHierarchy.name(run: job.runID, attempt: job.attempt)
            switch AttemptCgroup.create(hierarchy.directory + "/" + name, name: name, home: hierarchy.home, plan: plan.limitPlan ?? .init(),
                                        v1: plan.v1Groups) {
            case let .success(made): cgroup = made
            case let .failure(why):
                for fd in out + err + prog { close(fd) }
                return .failure(SpawnFailure(message: "cannot give the attempt its cgroup: \(why)"))
            }
        }
        var pid: pid_t = 0, pidfd: Int32 = -1
        let action = job.action
        // The spawn is counted before it starts: a leader that exits at once would otherwise be
        // reaped as an orphan before its pid is known, its status lost and its attempt never ended.
        // A count, so that spawns on several threads at once each hold the sweep off.
        guard ProcessAttempt.leaders.withLock({ $0.beginSpawn() }) else {
            for fd in out + err + prog where fd >= 0 { close(fd) }
            cgroup?.closeProcs()
            cgroup?.remove()
            return .failure(SpawnFailure(message: "cannot run \(job.action.exec[0]): this host is fenced (it lost its fleet lease), no process starts"))
        }
        let rc = plan.withPointers(prefix: prefix, own: own) { argv, envp in
            Self.spawn(action, argv, envp, stdoutEnd, stderrEnd, prog[1], cgroup: cgroup, &pid, &pidfd)
        }
        ProcessAttempt.leaders.withLock { $0.endSpawn(rc == 0 ? pid : nil) }
        for fd in [out[1], err[1], prog[1]] where fd >= 0 { close(fd) }
        cgroup?.closeProcs()
        guard rc == 0 else {
            for fd in [out[0], err[0], prog[0]] where fd >= 0 { close(fd) }
            cgroup?.remove()
            var message = "cannot run \(job.action.exec[0]): \(String(cString: strerror(rc)))"
            if rc == ENOENT, let cwd = job.action.cwd, access(cwd, F_OK) != 0 {
                message = "cannot run \(job.action.exec[0]): working directory \(cwd) does not exist"
            }
            return .failure(SpawnFailure(message: message))
        }
        afterSpawn?(pid)
        if pidfd < 0 { pidfd = baton_pidfd_open(pid) }
        let tree: ProcessAttempt.Tree = cgroup.map { .cgroup($0) } ?? .tagged(TaggedTree(leader: pid, instance: job.instance, run: job.runID))
        return .success(ProcessAttempt.Spawned(pid: pid, pidfd: pidfd, group: ProcessGroup(pgid: pid, identity: ProcessGroup.identity(of: pid)),
                                               tree: tree, pipes: .init(stdout: out[0], stderr: err[0], progress: prog[0]),
                                               hookOutput: hookOutput))
    }

    /// posix_spawn in the common case. Into a cgroup: clone3 born in it where the kernel can
    /// (`CLONE_INTO_CGROUP`), else vfork and exec with the child writing itself into its
    /// `cgroup.procs`; vfork and exec too when the process takes another identity or umask first.
    static func spawn(_ action: Action, _ argv: UnsafePointer<UnsafePointer<CChar>?>, _ envp: UnsafePointer<UnsafePointer<CChar>?>,
                      _ stdout: Int32, _ stderr: Int32, _ progress: Int32, cgroup: AttemptCgroup?,
                      _ pid: inout pid_t, _ pidfd: inout Int32) -> Int32 {
        let cwd = action.cwd.map { strdup($0) } ?? nil
        defer { free(cwd) }
        guard action.runAs != nil || action.umask != nil || cgroup != nil else {
            return baton_spawn(argv, envp, cwd, stdout, stderr, progress, &pid)
        }
        let user = action.runAs
        let groups = user?.groups ?? []
        let v1 = cgroup?.v1?.procs ?? []
        let (setIDs, uid, gid) = (user == nil ? Int32(0) : 1, user?.uid ?? 0, user?.gid ?? 0)
        let (setUmask, mask) = (action.umask == nil ? Int32(0) : 1, mode_t(action.umask ?? 0))
        return groups.withUnsafeBufferPointer { list in
            v1.withUnsafeBufferPointer { v1 in
                if let cgroup {
                    let rc = baton_spawn_clone3(argv, envp, cwd, stdout, stderr, progress, cgroup.directory, v1.baseAddress, v1.count,
                                                setIDs, uid, gid, list.baseAddress, list.count, setUmask, mask, &pid, &pidfd)
                    if rc != -1 { return rc }
                }
                let procs = cgroup?.openProcs() ?? -1
                if cgroup != nil && procs < 0 { return errno }
                defer { if procs >= 0 { close(procs) } }
                return baton_spawn_in(argv, envp, cwd, stdout, stderr, progress, procs, v1.baseAddress, v1.count,
                                      setIDs, uid, gid, list.baseAddress, list.count, setUmask, mask, &pid)
            }
        }
    }
}
