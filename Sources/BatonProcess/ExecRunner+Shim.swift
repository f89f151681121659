import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

/// `baton-shim`: the parent of an attempt's action, which outlives batond (docs/architecture.md,
/// "A run outlives batond"). batond spawns the shim as the attempt's leader with the setup the action
/// needs; the shim runs the action, relays its output, spools it to `DIR/output` once batond's pipes
/// are gone, and writes its status to `DIR/status` before it exits the same way.
public struct ShimSetup: Sendable, Equatable {
    /// The `baton-shim` executable.
    public var executable: String
    /// The directory of the attempts' shim directories (`RUN-ATTEMPT`), batond's own: under its
    /// runtime directory (a tmpfs) where it has a safe one (`ShimSetup.place`), else `disk`.
    public var directory: String
    /// The state disk's place (`DATABASE-shims`, a fleet host's `DATABASE-shims-HOST`): a shim
    /// makes its `RUN-ATTEMPT` there only once batond is gone, for its spool and its status.
    public var disk: String
    /// Other runtime places an earlier batond of the same database may have used (the packaged
    /// `/run/baton`'s, for a batond given another `$RUNTIME_DIRECTORY`): recovery looks there too.
    public var earlierDirectories: [String]

    public init(executable: String, directory: String, disk: String? = nil, earlierDirectories: [String] = []) {
        self.executable = executable
        self.directory = directory
        self.disk = disk ?? directory
        self.earlierDirectories = earlierDirectories
    }

    /// Every place recovery looks in, in order: batond's own, the earlier runtime ones, the disk.
    public var places: [String] {
        var places = [directory]
        for place in earlierDirectories + [disk] where !places.contains(place) { places.append(place) }
        return places
    }

    /// `baton-shim` beside this process's executable, else in `../libexec/baton` from it (`make
    /// install`), else in /usr/libexec/baton; nil when none is.
    public static func findExecutable() -> String? {
        var candidates = ["/usr/libexec/baton/baton-shim"]
        if let me = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.insert(contentsOf: [me.parentPath + "/baton-shim", me.parentPath.parentPath + "/libexec/baton/baton-shim"], at: 0)
        }
        return candidates.first { access($0, X_OK) == 0 }
    }

    /// The shim directory of one attempt.
    public func directory(run: Int64, attempt: Int) -> String { "\(directory)/\(run)-\(attempt)" }

    /// The attempt's directory on the state disk (made by its shim once batond is gone).
    public func disk(run: Int64, attempt: Int) -> String { "\(disk)/\(run)-\(attempt)" }
}

/// What a shim left in its directory: how its action ended (nil: not yet, or never said), and
/// what the action wrote while batond was gone.
public struct ShimRecord: Sendable, Equatable {
    public var exitCode: Int32?
    public var signal: Int32?
    public var output: [UInt8]
    /// The action's program could not be executed (the shim exited 127): why (an errno), and the
    /// program as the action names it.
    public var execFailure: (errno: Int32, program: String)?
    /// Where in the run's output the spool was told from, by a batond that collected it before
    /// (`DIR/taken`, beside `output`): nil where none did.
    public var taken: Int64?
    /// The directory `output` was read from.
    public var spoolPlace: String?

    public var ended: Bool { exitCode != nil || signal != nil }

    /// The start's failure, worded as a spawn's (`cannot run PROGRAM: reason`).
    public var execFailureMessage: String? {
        execFailure.map { "cannot run \($0.program): \(String(cString: strerror($0.errno)))" }
    }

    public static func == (a: ShimRecord, b: ShimRecord) -> Bool {
        a.exitCode == b.exitCode && a.signal == b.signal && a.output == b.output
            && a.execFailure?.errno == b.execFailure?.errno && a.execFailure?.program == b.execFailure?.program
    }

    /// Reads `DIR/status` ("exit N" or "signal N"; after "exit 127", "exec-failed ERRNO PROGRAM"
    /// where the program could not be executed) and `DIR/output`.
    public static func read(_ directory: String) -> ShimRecord { read([directory]) }

    /// The status and the output from the first of `directories` that holds each: an attempt's
    /// runtime directory, then its directory on the disk (a shim writes one status, in one of them).
    public static func read(_ directories: [String]) -> ShimRecord {
        var record = ShimRecord(exitCode: nil, signal: nil, output: [])
        let directories = directories.filter(isOwnDirectory)
        if let status = directories.lazy.compactMap({ try? String(contentsOfFile: $0 + "/status", encoding: .utf8) }).first {
            let lines = status.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
            let words = lines[0].split(separator: " ")
            if words.count == 2, let value = Int32(words[1]) {
                if words[0] == "exit" { record.exitCode = value } else if words[0] == "signal" { record.signal = value }
            }
            if lines.count == 2 { record.execFailure = execFailure(lines[1]) }
        }
        if let (place, data) = directories.lazy.compactMap({ place in FileManager.default.contents(atPath: place + "/output").map { (place, $0) } }).first {
            (record.output, record.spoolPlace) = (Array(data), place)
            record.taken = (try? String(contentsOfFile: place + "/taken", encoding: .utf8)).flatMap { Int64($0) }
        }
        return record
    }

    /// What of the spool the run's output does not hold yet, where the history holds `total` bytes:
    /// all of it, unless a batond that collected it before (and died before removing it) said where
    /// it began (`taken`) and the history holds some or all of it from there.
    public func untold(historyTotal total: Int64) -> [UInt8] {
        guard let taken else { return output }
        return Array(output.dropFirst(Int(max(0, min(Int64(output.count), total - taken)))))
    }

    /// Before the spool is told (at `total`, the history's bytes of the run before it): says so in
    /// its directory (`taken`, tmp + rename), so that a batond that collects it again after a crash
    /// does not tell it twice. Kept where one is there already: it names where the spool began.
    public func markTaken(at total: Int64) {
        guard taken == nil, let place = spoolPlace, !output.isEmpty else { return }
        let temporary = place + "/taken.tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data(String(total).utf8)) else { return }
        if rename(temporary, place + "/taken") != 0 { unlink(temporary) }
    }

    /// Whether `path` is a directory batond's shims make: not a symlink, batond's user's, writable by
    /// no one else (as the shim takes one, `own_dir`). Only such a place is read: another user who
    /// may write the database's directory could plant one holding a status and an output for a run
    /// (review s37 F1d).
    static func isOwnDirectory(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR && info.st_uid == geteuid() && info.st_mode & 0o022 == 0
    }

    /// Whether `path` is a directory itself, not a symlink to one: an attempt's place beside the
    /// database is emptied only so (another user who may write there could plant one).
    static func isRealDirectory(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// "exec-failed ERRNO PROGRAM\n" (the program may hold spaces, not a newline).
    private static func execFailure(_ line: Substring) -> (errno: Int32, program: String)? {
        var line = line
        if line.last == "\n" { line.removeLast() }
        let words = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard words.count == 3, words[0] == "exec-failed", let errno = Int32(words[1]) else { return nil }
        return (errno, String(words[2]))
    }

    /// Removes a shim directory and what is in it. Most hold only `status` (the shim renames
    /// `status.tmp` to it, and spools `output` only while batond is gone): that and the directory
    /// go first, the rest only when the directory is not empty then (two calls a run, not four).
    /// Whether a status was there.
    @discardableResult
    public static func remove(_ directory: String) -> Bool {
        // A symlink in an attempt's place was planted (the shim makes directories, and takes no
        // other): it goes, never what it points at.
        guard isRealDirectory(directory) else {
            unlink(directory)
            return false
        }
        let hadStatus = unlink(directory + "/status") == 0
        guard rmdir(directory) != 0, errno == ENOTEMPTY || errno == EEXIST else { return hadStatus }
        for name in ["status.tmp", "output", "taken", "taken.tmp"] { unlink(directory + "/" + name) }
        rmdir(directory)
        return hadStatus
    }
}

extension ExecRunner {
    /// Whether this job's process runs under the shim: a runner given one, an action that
    /// survives restarts (`survivesRestart`), not a pseudo-terminal's (the terminal is batond's),
    /// not a hook's run (its `BATON_HOOK_OUTPUT` file is batond's, removed when batond starts).
    /// Nor a run as another user than batond's: its shim could not reach its directory under
    /// batond's state directory (0750, and the shims' 0700) to keep its status and output.
    func shim(for job: Job) -> ShimSetup? {
        guard let shim, job.action.survivesRestart, !job.action.tty, job.hook == nil else { return nil }
        if let user = job.action.runAs, user.uid != geteuid() { return nil }
        return shim
    }

    /// The argv before `exec` that runs it under the shim, and the attempt's shim directory, made empty. The
    /// program is resolved here (batond's PATH, as posix_spawnp would), so that a program that
    /// is not there fails the start as it does without a shim. The directory is made under the
    /// runtime place, else on the disk; one that cannot be made at all (a full disk) runs the
    /// action without the shim: nil.
    func shimmed(_ exec: [String], _ job: Job, _ shim: ShimSetup) -> Result<(prefix: [String], directory: String, disk: String?)?, SpawnFailure> {
        var resolved = [CChar](repeating: 0, count: Int(PATH_MAX))
        var rc = baton_resolve_program(exec[0], &resolved, resolved.count)
        let program = rc == 0 ? String(cString: resolved) : exec[0]
        // A relative path is the action's working directory's, where the shim runs it.
        if rc == 0, access(program.hasPrefix("/") ? program : (job.action.cwd.map { $0 + "/" } ?? "") + program, X_OK) != 0 { rc = errno }
        guard rc == 0 else {
            if rc == ENOENT, let cwd = job.action.cwd, access(cwd, F_OK) != 0 {
                return .failure(SpawnFailure(message: "cannot run \(exec[0]): working directory \(cwd) does not exist"))
            }
            return .failure(SpawnFailure(message: "cannot run \(exec[0]): \(String(cString: strerror(rc)))"))
        }
        var directory = shim.directory(run: job.runID, attempt: job.attempt)
        let disk = shim.disk(run: job.runID, attempt: job.attempt)
        // A runtime directory that refuses it (a full /run): the attempt's directory on the disk, as without one.
        if !Self.makeShimDirectory(directory, in: shim.directory) {
            guard disk != directory, Self.makeShimDirectory(disk, in: shim.disk) else { return .success(nil) }
            directory = disk
        }
        // The spool keeps as much as the history would (`output.keep`), and at least the attempt's tail.
        let bound = max(Int64(tailLimit), job.action.outputKeep)
        // `-s`: the disk's directory for the spool and a status written once batond is gone.
        let spool = directory == disk ? [] : ["-s", disk]
        return .success(([shim.executable] + spool + [directory, String(bound), program], directory, directory == disk ? nil : disk))
    }

    /// Makes an attempt's shim directory, empty, in `place`. The place and a stale directory of
    /// this attempt's (a crash's) are seen to only when the mkdir finds them missing or there:
    /// not five failing calls for every run.
    static func makeShimDirectory(_ directory: String, in place: String) -> Bool {
        guard mkdir(directory, 0o700) != 0 else { return true }
        if errno == ENOENT { mkdir(place, 0o700) } else if errno == EEXIST { ShimRecord.remove(directory) }
        return mkdir(directory, 0o700) == 0
    }
}
