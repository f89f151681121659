import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// An attempt's processes where batond has no cgroup for it: the leader's process group, every
/// descendant of the leader, and, among batond's own children (a subreaper adopts every orphan of
/// its descendants, `setsid` or double fork), every process tagged with the run's
/// `BATON_INSTANCE` and `BATON_RUN_ID`, with all of its descendants. A process that both leaves
/// the group and clears its environment after its parent died is out of reach: cgroups have no
/// such hole.
struct TaggedTree: Sendable {
    let leader: Int32
    let tag: (instance: String, run: Int64)?

    /// An attempt a previous batond started: its orphans went to init (or a subreaper above), never to this batond.
    let adopted: Bool
    /// An adopted leader's identity (`ProcessGroup.identity`): its group and descendants are the
    /// tree's only while the pid is still that process (once the shim ended, the pid may be a
    /// stranger's: the tree is then found by its tag alone).
    let leaderIdentity: String?

    init(leader: Int32, instance: String?, run: Int64, adopted: Bool = false, leaderIdentity: String? = nil) {
        self.leader = leader
        self.tag = instance.map { ($0, run) }
        self.adopted = adopted
        self.leaderIdentity = leaderIdentity
    }

    /// Whether the leader's pid, its group and its descendants are the tree's now.
    var leaderIsOurs: Bool {
        !adopted || (leaderIdentity.map { ProcessGroup.identity(of: leader) == $0 } ?? false)
    }

    /// The live members now, the leader excluded (`others`: the leaders of other attempts,
    /// whose trees are theirs). Without subreaping, orphans go to init: every process is a root.
    /// (`children`: how a process's children are read; the kernel's files but in tests.)
    func members(others: Set<Int32>, subreaper: Bool, children: (Int32) -> [Int32]? = Self.children(of:),
                 table read: () -> ProcessTable = ProcessTable.read, environ: (Int32) -> [UInt8]? = Self.environ(of:)) -> Set<Int32> {
        // An adopted tree's orphans went to the shim (its subreaper) or init, not to this batond.
        let subreaper = subreaper && !adopted
        // The kernel calls the `children` files unreliable while the tree changes (a sibling that
        // exits during the read can make it skip another): a walk that found nobody, on which an
        // attempt's end is decided, is made again from every process's `stat`.
        if subreaper, let found = membersByChildren(others: others, children: children), !found.isEmpty { return found }
        let table = read()
        var found = Set<Int32>()
        // A process whose parent died while /proc was read is being re-parented (to batond, as
        // subreaper): a root too, or a dying tree's last member could go unseen.
        // Without subreaping, an orphan goes to init (or the nearest subreaper above batond): the
        // group's members are found by their group, and only processes whose parent is init or
        // gone are read for the tag (reading every process's environment would cost milliseconds).
        let roots = subreaper ? table.children(of: getpid()) + table.orphans
            : table.processes.filter { $0.value.pgid == leader || $0.value.parent <= 1 || table.processes[$0.value.parent] == nil }.map(\.key)
        // An adopted tree whose shim has ended is found by its tag alone: the pid the history
        // recorded may be a stranger's by now, and so its group.
        let ours = leaderIsOurs
        // A root that died after the table was read has no environment to read: its children (in
        // the table under it, being re-parented now) are looked at as roots in its place, or a
        // tagged tree whose top process died at that moment would look empty and its attempt end
        // with the rest alive (an adopted tree in process-group mode, under load).
        var pending = roots, looked = Set<Int32>()
        while let pid = pending.popLast() {
            guard looked.insert(pid).inserted, pid != leader, !others.contains(pid), let stat = table.processes[pid] else { continue }
            if stat.pgid == leader && ours {
                found.formUnion(table.descendants(of: pid, including: true))
                continue
            }
            guard let variables = environ(pid) else { pending += table.children(of: pid); continue }
            if isTagged(variables) { found.formUnion(table.descendants(of: pid, including: true)) }
        }
        if ours, table.processes[leader] != nil { found.formUnion(table.descendants(of: leader, including: false)) }
        return found
    }

    /// The same from `/proc/PID/task/TID/children` alone (batond's children, then down from the
    /// run's): a few reads instead of one per process of the machine. Nil where the kernel has no
    /// such files. A process that dies during the walk (the leader too) hands its children to
    /// batond, perhaps after batond's were read: a walk that saw a process vanish, or after which
    /// batond has a child it did not have before, is made again.
    func membersByChildren(others: Set<Int32>, children: (Int32) -> [Int32]? = Self.children(of:)) -> Set<Int32>? {
        for _ in 0..<8 {
            guard let roots = children(getpid()) else { return nil }
            var found = Set<Int32>(), vanished = false
            for pid in roots where pid != leader && !others.contains(pid) {
                guard let stat = ProcStat(pid: pid), !stat.isZombie else { continue }
                if stat.pgid == leader || isTagged(pid) {
                    found.formUnion(descendants(of: pid, including: true, vanished: &vanished, children: children))
                }
            }
            if ProcStat(pid: leader).map({ !$0.isZombie }) == true {
                found.formUnion(descendants(of: leader, including: false, vanished: &vanished, children: children))
            }
            guard let after = children(getpid()) else { return nil }
            if !vanished && Set(after).isSubset(of: roots) { return found }
        }
        return nil
    }

    func descendants(of pid: Int32, including: Bool, vanished: inout Bool, children: (Int32) -> [Int32]?) -> Set<Int32> {
        var found: Set<Int32> = including ? [pid] : []
        var next = [pid]
        while let current = next.popLast() {
            guard let below = children(current) else { vanished = true; continue }
            for child in below where found.insert(child).inserted { next.append(child) }
        }
        return found
    }

    /// The children of every thread of `pid`; nil when it is gone or the kernel has no such files.
    static func children(of pid: Int32) -> [Int32]? {
        var buffer = [Int32](repeating: 0, count: 4_096)
        let count = buffer.withUnsafeMutableBufferPointer { baton_proc_children(pid, $0.baseAddress, Int32($0.count)) }
        return count < 0 ? nil : Array(buffer[..<Int(count)])
    }

    func isTagged(_ pid: Int32) -> Bool {
        Self.environ(of: pid).map(isTagged) ?? false
    }

    /// A process's environment, NUL-separated; nil when it is gone (or unreadable).
    static func environ(of pid: Int32) -> [UInt8]? {
        FileManager.default.contents(atPath: "/proc/\(pid)/environ").map { [UInt8]($0) }
    }

    /// Whether an environment holds the run's `BATON_INSTANCE` and `BATON_RUN_ID`.
    func isTagged(_ environ: [UInt8]) -> Bool {
        guard let tag else { return false }
        var instance = false, run = false
        let wantedInstance = Array("BATON_INSTANCE=\(tag.instance)".utf8), wantedRun = Array("BATON_RUN_ID=\(tag.run)".utf8)
        for variable in environ.split(separator: 0) {
            if variable.elementsEqual(wantedInstance) { instance = true }
            if variable.elementsEqual(wantedRun) { run = true }
        }
        return instance && run
    }
}

/// The live processes of the machine at one moment, from `/proc/*/stat`: each one's parent and
/// group. (`/proc/PID/task/TID/children` would be cheaper, but kernels without
/// CONFIG_PROC_CHILDREN have no such file.)
struct ProcessTable {
    var processes: [Int32: ProcStat] = [:]
    var byParent: [Int32: [Int32]] = [:]

    static func read() -> ProcessTable {
        let capacity = 65_536
        var pids = [Int32](repeating: 0, count: capacity), parents = pids, groups = pids
        var states = [CChar](repeating: 0, count: capacity)
        let count = Int(baton_proc_table(&pids, &parents, &groups, &states, Int32(capacity)))
        var table = ProcessTable()
        for index in 0..<max(count, 0) {
            let stat = ProcStat(state: Character(Unicode.Scalar(UInt8(bitPattern: states[index]))), parent: parents[index], pgid: groups[index])
            guard !stat.isZombie else { continue }
            table.processes[pids[index]] = stat
            table.byParent[stat.parent, default: []].append(pids[index])
        }
        return table
    }

    func children(of pid: Int32) -> [Int32] { byParent[pid] ?? [] }

    /// The processes whose parent is not in the table (it exited while the table was read).
    var orphans: [Int32] {
        byParent.filter { parent, _ in parent > 1 && processes[parent] == nil }.flatMap(\.value)
    }

    /// `pid` (when `including`) and every live process below it.
    func descendants(of pid: Int32, including: Bool) -> Set<Int32> {
        var found: Set<Int32> = including ? [pid] : []
        var next = [pid]
        while let current = next.popLast() {
            for child in children(of: current) where found.insert(child).inserted { next.append(child) }
        }
        return found
    }
}

/// The fields of `/proc/PID/stat` a tree walk needs.
struct ProcStat {
    var state: Character
    var parent: Int32
    var pgid: Int32

    var isZombie: Bool { state == "Z" || state == "X" }

    init(state: Character, parent: Int32, pgid: Int32) {
        self.state = state
        self.parent = parent
        self.pgid = pgid
    }

    init?(pid: Int32) {
        guard let bytes = KernelFile.read("/proc/\(pid)/stat", oneRecord: true) else { return nil }
        self.init(stat: String(decoding: bytes, as: UTF8.self))
    }

    /// From the text after the command name, which may itself hold spaces and parentheses.
    init?(stat: String) {
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 2, let state = fields[0].first, let parent = Int32(fields[1]), let pgid = Int32(fields[2]) else { return nil }
        self.state = state
        self.parent = parent
        self.pgid = pgid
    }
}
