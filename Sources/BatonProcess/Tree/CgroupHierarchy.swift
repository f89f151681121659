import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// The cgroup v2 subtree batond owns for its runs: `<its own cgroup>/baton-<instance>/`, with one
/// child per attempt (`run-42-1`). Found from `/proc/self/mountinfo` and `/proc/self/cgroup`,
/// never assumed: a hybrid host mounts cgroup2 at `/sys/fs/cgroup/unified` beside v1 controllers,
/// a pure v2 host at `/sys/fs/cgroup`, and under systemd with `Delegate=yes` batond's own cgroup
/// is `/system.slice/batond.service`, which it may write.
public struct CgroupHierarchy: Sendable, Equatable {
    /// The subtree's directory, such as `/sys/fs/cgroup/unified/baton-3f2a9c1e`.
    public let directory: String
    /// batond's own cgroup: where kept leftovers go (the subtree's parent, or the leaf batond
    /// moved itself into to enable controllers).
    public var home: String
    /// Which `limits` the attempts' cgroups can enforce.
    public var limits: LimitSupport

    public init(directory: String, home: String? = nil, limits: LimitSupport = LimitSupport(controllers: [])) {
        self.directory = directory
        self.home = home ?? directory.parentPath
        self.limits = limits
    }

    /// Where cgroup2 is mounted, from the text of `/proc/self/mountinfo`; nil when it is not.
    /// Fields: id, parent, major:minor, root, mount point, options, optional fields, `-`, type, …
    public static func mountPoint(mountinfo: String) -> String? {
        for line in mountinfo.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count, fields[dash + 1] == "cgroup2",
                  fields.count > 4, fields[3] == "/" else { continue }
            return unescape(String(fields[4]))
        }
        return nil
    }

    /// This process's cgroup v2 path, from the text of `/proc/self/cgroup` (the `0::` line).
    public static func ownPath(cgroup: String) -> String? {
        for line in cgroup.split(separator: "\n") where line.hasPrefix("0::") {
            let path = String(line.dropFirst(3))
            // A cgroup namespace's outside is shown as "/.."; batond cannot place runs there.
            guard path.hasPrefix("/"), !path.hasPrefix("/..") else { return nil }
            return path
        }
        return nil
    }

    /// The subtree's name for an instance: `baton-` and 8 hex digits of a stable hash of it, so
    /// that two batonds on one machine (two databases, two fleets) never touch each other's runs.
    public static func subtreeName(instance: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in instance.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let hex = String(hash >> 32, radix: 16)
        return "baton-" + String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// Why batond cannot put runs in cgroups here, or the hierarchy it can: it makes the subtree
    /// (or finds it left by an earlier batond) and checks it may create and remove a cgroup in it.
    /// With `probeOnly` it leaves nothing behind (the check is made in a cgroup it removes).
    public static func prepare(instance: String, probeOnly: Bool = false) -> Result<CgroupHierarchy, CgroupUnavailable> {
        guard let mountinfo = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8),
              let mount = mountPoint(mountinfo: mountinfo) else {
            return .failure(CgroupUnavailable("no cgroup2 file system is mounted (/proc/self/mountinfo)"))
        }
        guard let cgroup = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8), let own = ownPath(cgroup: cgroup) else {
            return .failure(CgroupUnavailable("batond's own cgroup v2 path is unknown (/proc/self/cgroup)"))
        }
        let base = mount + (own == "/" ? "" : own)
        let directory = base + "/" + subtreeName(instance: instance)
        if probeOnly && access(directory, F_OK) != 0 {
            let probe = base + "/baton-probe-\(getpid())"
            guard mkdir(probe, 0o755) == 0 else {
                return .failure(CgroupUnavailable("cannot create cgroups in \(base): \(String(cString: strerror(errno)))"))
            }
            let killable = access(probe + "/cgroup.kill", W_OK) == 0
            rmdir(probe)
            guard killable else { return .failure(CgroupUnavailable("\(base) has no cgroup.kill (Linux 5.14 or later is needed)")) }
            let limits = limitSupport(base: base, directory: directory, isRoot: own == "/", probeOnly: true)
            return .success(CgroupHierarchy(directory: directory, home: base, limits: limits))
        }
        if mkdir(directory, 0o755) != 0 && errno != EEXIST {
            return .failure(CgroupUnavailable("cannot create \(directory): \(String(cString: strerror(errno)))"
                + (errno == EACCES || errno == EROFS || errno == EPERM ? " (run batond as root, or under systemd with Delegate=yes)" : "")))
        }
        let probe = directory + "/probe-\(getpid())"
        guard mkdir(probe, 0o755) == 0 else {
            return .failure(CgroupUnavailable("cannot create cgroups in \(directory): \(String(cString: strerror(errno)))"))
        }
        let killable = access(probe + "/cgroup.kill", W_OK) == 0
        rmdir(probe)
        guard killable else { return .failure(CgroupUnavailable("\(directory) has no cgroup.kill (Linux 5.14 or later is needed)")) }
        let limits = limitSupport(base: base, directory: directory, isRoot: own == "/", probeOnly: probeOnly)
        // batond may have moved itself into a leaf (to enable controllers): its home is where it is now.
        let now = (try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8)).flatMap(ownPath(cgroup:)) ?? own
        return .success(CgroupHierarchy(directory: directory, home: mount + (now == "/" ? "" : now), limits: limits))
    }

    /// The cgroup of one attempt.
    public func path(run: Int64, attempt: Int) -> String { "\(directory)/\(Self.name(run: run, attempt: attempt))" }

    /// The name of one attempt's cgroup (`run-42-1`), in each hierarchy.
    static func name(run: Int64, attempt: Int) -> String { "run-\(run)-\(attempt)" }

    /// Kills and removes every attempt's cgroup left in the subtree (by a batond that crashed:
    /// at start nothing of this instance runs but the adopted runs' attempts, `kept`: their
    /// `run-RUN-ATTEMPT` names); returns how many processes were in them. The kept ones are
    /// thawed: a batond killed between a signal's freeze and its thaw (`AttemptCgroup.signal`,
    /// `evict`) left its attempt frozen, and nothing else freezes one.
    @discardableResult
    public func removeAll(except kept: Set<String> = []) -> Int {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else {
            return AttemptCgroupV1.removeAll(in: v1Directories, except: kept)
        }
        var killed = 0
        for name in entries where name.hasPrefix("run-") || name.hasPrefix("probe-") {
            if kept.contains(name) {
                _ = AttemptCgroup.write("0", to: directory + "/" + name + "/cgroup.freeze")
            } else {
                killed += AttemptCgroup.destroy(directory + "/" + name)
            }
        }
        // Their processes are gone with the cgroup2 ones; what v1 groups still hold, v1 kills.
        return killed + AttemptCgroupV1.removeAll(in: v1Directories, except: kept)
    }

    /// Removes the subtrees, cgroup2's and v1's, once every run has ended (batond stops).
    public func removeSubtrees() {
        rmdir(directory)
        for subtree in v1Directories { rmdir(subtree) }
    }

    /// SIGKILLs every process of every attempt at once (a fleet host fencing itself): `cgroup.kill`
    /// of the subtree reaches all its descendants.
    @discardableResult
    public func killAll() -> Bool {
        let fd = open(directory + "/cgroup.kill", O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return baton_write_control(fd, "1") == 0
    }

    /// Mount points escape space, tab, newline and backslash as `\\ooo`.
    static func unescape(_ text: String) -> String {
        guard text.contains("\\") else { return text }
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "\\"), utf8.count >= 3, let value = UInt8(String(decoding: utf8.prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(value)
                utf8 = utf8.dropFirst(3)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Why runs cannot have a cgroup each here.
public struct CgroupUnavailable: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
