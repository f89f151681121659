import BatonEngine
import BatonRuntime
import CBatonSystem
import FoundationEssentials
import Glibc

extension ExecRunner {
    /// Writes the last output of the run that fired a hook to a file of its own (mode 0600, the
    /// run's user's where it runs as another), for `BATON_HOOK_OUTPUT`; the attempt removes it
    /// when it ends, and a batond that crashed first leaves it for the next start to remove
    /// (`removeLeftHookOutputs`). A temporary file rather than an inherited descriptor: a shell
    /// reads it with `cat`, and no descriptor beyond `BATON_PROGRESS_FD` reaches the process.
    func writeHookOutput(_ hook: HookContext, _ job: Job) -> Result<String, HookOutputError> {
        let temporary = Self.temporaryDirectory(inherited)
        let prefix = HookOutputs.prefix(instance: job.instance) + "\(job.runID)-\(job.attempt)-"
        let made: (fd: Int32, path: String)
        let created: Result<(fd: Int32, path: String), Errno>
        if let own = HookOutputs(temporary: temporary) { created = own.create(prefix: prefix) } else { created = Self.createShared(in: temporary, prefix: prefix) }
        switch created {
        case let .success(file): made = file
        case let .failure(why): return .failure(HookOutputError(message: "cannot write the hook's output file in \(temporary): \(why.description)"))
        }
        let (fd, path) = made
        defer { close(fd) }
        if let user = job.action.runAs, fchown(fd, user.uid, user.gid) != 0 {
            let why = String(cString: strerror(errno))
            unlink(path)
            return .failure(HookOutputError(message: "cannot give the hook's output file \(path) to \(user.user): \(why)"))
        }
        var written = 0
        while written < hook.output.count {
            let n = hook.output[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else {
                let why = String(cString: strerror(errno))
                unlink(path)
                return .failure(HookOutputError(message: "cannot write the hook's output file \(path): \(why)"))
            }
            written += n
        }
        return .success(path)
    }

    /// Removes the hook output files a batond of this `instance` (its database, or its fleet
    /// instance) left when it crashed; call at start, before any run starts. Returns how many.
    public static func removeLeftHookOutputs(instance: String?, inherited: [String: String] = ExecRunner.defaultInherited()) -> Int {
        guard let own = HookOutputs(temporary: temporaryDirectory(inherited)) else { return 0 }
        return own.removeAll(prefix: HookOutputs.prefix(instance: instance))
    }

    static func temporaryDirectory(_ inherited: [String: String]) -> String {
        inherited["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    /// The fallback where batond's own directory cannot be had (another user made its name
    /// first): in the shared temporary directory, where nothing removes it after a crash.
    /// A name no other user can guess and take first (mkostemp: random, O_EXCL, mode 0600): a
    /// predictable one in a shared /tmp let any local user stop a failure hook from starting.
    private static func createShared(in directory: String, prefix: String) -> Result<(fd: Int32, path: String), Errno> {
        var template = Array("\(directory)/\(prefix)XXXXXX".utf8CString)
        // Close-on-exec from its creation: a child spawned meanwhile on another thread must not get it.
        let fd = template.withUnsafeMutableBufferPointer { baton_mkstemp_cloexec($0.baseAddress!) }
        guard fd >= 0 else { return .failure(Errno(errno)) }
        return .success((fd, template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }))
    }
}

/// Why a hook run's output file could not be made: the attempt fails to start, saying so.
struct HookOutputError: Error {
    var message: String
}

/// An errno, said as `strerror` says it.
struct Errno: Error, CustomStringConvertible {
    let code: Int32
    init(_ code: Int32) { self.code = code }
    var description: String { String(cString: strerror(code)) }
}
