import BatonEngine
import BatonRuntime
import FoundationEssentials
import Glibc

/// What keeps the files an attempt left in `$BATON_ARTIFACTS` (batond: the SQLite history).
public protocol ArtifactKeeper: Sendable {
    /// Keeps `found` as the artifacts of `run` (replacing an earlier attempt's), reading the files
    /// through `found.open`, off the loop; calls `done` once they are kept (or failed to be, said
    /// in the run's notices), from any thread. The directory is removed after `done`.
    func keep(_ found: ArtifactScan, run: Int64, attempt: Int, done: @escaping @Sendable () -> Void)
}

/// Where the attempts' artifact directories are (`DATABASE-artifacts/RUN-ATTEMPT`), and who keeps their files.
public struct ArtifactSetup: Sendable {
    /// batond's directory of them (0711: a run's user reaches its own by name, lists nothing).
    public var directory: String
    public var keeper: any ArtifactKeeper

    public init(directory: String, keeper: any ArtifactKeeper) {
        self.directory = directory
        self.keeper = keeper
    }

    /// One attempt's directory.
    public func directory(run: Int64, attempt: Int) -> String { "\(directory)/\(run)-\(attempt)" }

    /// Makes the attempt's directory, empty, mode 0700, the run's user's where it runs as another.
    func make(run: Int64, attempt: Int, owner: RunAs?) -> Result<String, SpawnFailure> {
        if mkdir(directory, 0o711) != 0 && errno != EEXIST {
            return .failure(SpawnFailure(message: "cannot make the artifacts directory \(directory): \(String(cString: strerror(errno)))"))
        }
        _ = chmod(directory, 0o711)
        let path = directory(run: run, attempt: attempt)
        ArtifactTree.remove(path)
        guard mkdir(path, 0o700) == 0 else {
            return .failure(SpawnFailure(message: "cannot make the run's artifacts directory \(path): \(String(cString: strerror(errno)))"))
        }
        if let owner, owner.uid != geteuid(), let closed = Self.outOfReach(path, for: owner) {
            ArtifactTree.remove(path)
            return .failure(SpawnFailure(message: "\(owner.user) cannot reach its $BATON_ARTIFACTS \(path): \(closed) is not searchable by it "
                + "(give it o+x, such as StateDirectoryMode=0751 for /var/lib/baton)"))
        }
        if let owner, chown(path, owner.uid, owner.gid) != 0 {
            let why = String(cString: strerror(errno))
            ArtifactTree.remove(path)
            return .failure(SpawnFailure(message: "cannot give the artifacts directory \(path) to \(owner.user): \(why)"))
        }
        return .success(path)
    }

    /// The nearest directory above `path` that `user` may not search (its mode, owner and group
    /// decide), or nil when it reaches `path`.
    static func outOfReach(_ path: String, for user: RunAs) -> String? {
        var above = path.parentPath
        while !above.isEmpty {
            var info = stat()
            if stat(above, &info) == 0 {
                let mode = info.st_mode
                let searchable = info.st_uid == user.uid ? mode & 0o100 != 0
                    : (info.st_gid == user.gid || user.groups.contains(info.st_gid)) ? mode & 0o010 != 0 : mode & 0o001 != 0
                if !searchable { return above }
            }
            if above == "/" { return nil }
            above = above.parentPath
        }
        return nil
    }

    /// Removes every attempt's directory but those of `kept` (`RUN-ATTEMPT` names): at start, what a
    /// crashed batond left, but the directories of the attempts adopted. Returns how many.
    @discardableResult
    public func removeLeft(except kept: Set<String>) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var removed = 0
        for name in names where !kept.contains(name) {
            ArtifactTree.remove(directory + "/" + name)
            removed += 1
        }
        return removed
    }
}

/// One attempt's artifacts directory, as the attempt keeps it until its end.
struct ArtifactWork: Sendable {
    var setup: ArtifactSetup
    var path: String
    var run: Int64
    var attempt: Int
    var bound: Int64
    /// The run's user's uid where it is not batond's (its files must then be its own).
    var owner: uid_t?
}

/// Where a run runs as another user than batond: the owner its files must have, and the file
/// system they must be on (that of batond's artifacts directory: a mount there is not read).
public struct ArtifactOwner: Sendable, Equatable {
    public var uid: uid_t
    public var device: dev_t
}

/// What an attempt's directory holds, looked at once its processes are gone: the regular files
/// (recursively, by their path under it, never through a symlink) and what is said of the rest.
public struct ArtifactScan: Sendable {
    public struct File: Sendable, Equatable {
        /// The path under the directory, `/`-separated.
        public var name: String
        public var size: Int64
    }

    public var directory: String
    /// The files to keep, by name; none when over the bound.
    public var files: [File]
    /// What is said about the rest: links and devices not followed, and a bound exceeded.
    public var notices: [String]
    /// The bytes of every regular file found.
    public var total: Int64
    /// Whether the directory was there (an adopted attempt's may not be: nothing is kept then).
    public var found = true
    /// Where the run is another user's: whose its files must be, and on which file system.
    public var owner: ArtifactOwner?

    /// The most entries one attempt's directory is listed for (over it: none kept, said so).
    public static let maxFiles = 10_000
    /// The most notices about files not kept (then one saying how many more).
    public static let maxNotices = 100

    public init(directory: String, files: [File], notices: [String] = [], total: Int64? = nil) {
        self.directory = directory
        self.files = files
        self.notices = notices
        self.total = total ?? Self.sum(files.map(\.size))
    }

    /// The sum of `sizes`, saturating at `Int64.max` (a sparse file may say an exabyte): it stops there.
    public static func sum(_ sizes: some Sequence<Int64>) -> Int64 {
        var total: Int64 = 0
        for size in sizes {
            let (next, overflow) = total.addingReportingOverflow(max(size, 0))
            if overflow { return .max }
            total = next
        }
        return total
    }

    /// The files under `directory`, within `bound` bytes in all (over it: none, said so), listed
    /// for at most `maxFiles` entries (over it: none). Where `owner` (a uid not batond's) is given,
    /// its files must be its own, on the file system of the directory above `directory`.
    public static func look(_ directory: String, bound: Int64, owner: uid_t? = nil, maxFiles: Int = ArtifactScan.maxFiles) -> ArtifactScan {
        guard access(directory, F_OK) == 0 else {
            var missing = ArtifactScan(directory: directory, files: [])
            missing.found = false
            return missing
        }
        var walk = ArtifactTree.Walk(root: directory, limit: maxFiles, owner: owner.map { ArtifactOwner(uid: $0, device: device(of: directory)) })
        walk.walk("", depth: 0)
        walk.files.sort { $0.name < $1.name }
        var scan = ArtifactScan(directory: directory, files: walk.files, notices: walk.said, total: walk.total)
        scan.owner = walk.owner
        if walk.over {
            scan.notices.append("over \(maxFiles) files, none kept")
            scan.files = []
        } else if scan.total > bound {
            scan.notices.append("artifacts over \(ArtifactScan.size(bound)): \(ArtifactScan.size(scan.total)), none kept")
            scan.files = []
        }
        return scan
    }

    /// The file system of batond's directory above an attempt's (the attempt's own where that cannot be seen).
    static func device(of directory: String) -> dev_t {
        var info = stat()
        if stat(directory.parentPath, &info) == 0 || stat(directory, &info) == 0 { return info.st_dev }
        return 0
    }

    /// Why a file (its `stat` from a descriptor or a name not followed) of another user's run is not
    /// kept: batond reads as root what a user may have moved or linked there from another.
    static func refusal(_ info: stat, owner: ArtifactOwner?) -> String? {
        guard let owner else { return nil }
        if info.st_dev != owner.device { return "on another file system than $BATON_ARTIFACTS" }
        if info.st_uid != owner.uid { return "owned by uid \(info.st_uid), not the run's user" }
        if info.st_nlink != 1 { return "a hard link (\(info.st_nlink) names)" }
        return nil
    }

    /// Opens one of the files (as `open`) and looks at what it is now: a regular file, and the run's
    /// user's own where the run is another's. Otherwise the notice saying why, nothing left open.
    public func openChecked(_ name: String) -> Result<Int32, ArtifactRefused> {
        let fd = open(name)
        guard fd >= 0 else { return .failure(ArtifactRefused(notice: "\(name): cannot be read (\(String(cString: strerror(errno)))), not kept")) }
        var info = stat()
        var why = fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? nil : "not a regular file any more"
        why = why ?? Self.refusal(info, owner: owner)
        guard let why else { return .success(fd) }
        close(fd)
        return .failure(ArtifactRefused(notice: "\(name): \(why), not kept"))
    }

    /// Opens one of the files for reading without following a symlink at any step of its path
    /// (a process left behind cannot swap a directory for a link to another's file); -1 when it cannot.
    public func open(_ name: String) -> Int32 {
        ArtifactTree.open(directory, name)
    }

    /// `123 MiB`, `3.1 MiB`, `4 KiB`, `17 bytes`: to a tenth of the unit, rounded up (never under what it says).
    public static func size(_ bytes: Int64) -> String {
        for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] where bytes >= Int64(1) << shift {
            // By quotient and remainder: `bytes * 10` overflows past 800 PiB.
            let whole = bytes >> shift, part = bytes & ((Int64(1) << shift) - 1)
            let tenths = whole * 10 + (part * 10 + (Int64(1) << shift) - 1) >> shift
            return tenths % 10 == 0 ? "\(tenths / 10) \(unit)" : "\(tenths / 10).\(tenths % 10) \(unit)"
        }
        return bytes == 1 ? "1 byte" : "\(bytes) bytes"
    }
}

/// Why a file is not kept: what the run's notices say of it.
public struct ArtifactRefused: Error, Sendable {
    public var notice: String
}
