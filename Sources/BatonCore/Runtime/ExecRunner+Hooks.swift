import FoundationEssentials
import Glibc

extension ExecRunner {
    /// Writes the last output of the run that fired a hook to a file of its own (mode 0600, the
    /// run's user's where it runs as another), for `BATON_HOOK_OUTPUT`; the attempt removes it
    /// when it ends. A temporary file rather than an inherited descriptor: a shell reads it with
    /// `cat`, and no descriptor beyond `BATON_PROGRESS_FD` reaches the process.
    func writeHookOutput(_ hook: HookContext, _ job: Job) -> Result<String, HookOutputError> {
        let directory = inherited["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        // A name no other user can guess and take first (mkstemp: random, O_EXCL, mode 0600): a
        // predictable one in a shared /tmp let any local user stop a failure hook from starting.
        var template = Array("\(directory)/baton-hook-\(job.runID)-\(job.attempt)-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        guard fd >= 0 else { return .failure(HookOutputError(message: "cannot write the hook's output file in \(directory): \(String(cString: strerror(errno)))")) }
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
}

/// Why a hook run's output file could not be made: the attempt fails to start, saying so.
struct HookOutputError: Error {
    var message: String
}
