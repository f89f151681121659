import BatonCore
import Glibc

/// What `exec` names, checked at load: a program that is not there (yet) or that the action's
/// user may not run is accepted, since it may appear or change before a run, but warned of,
/// rather than found out at each run (issue 37, item 19).
extension ConfigReader {
    /// Warns when an absolute `exec` program does not exist, is not a regular file, or has no
    /// execute permission for the user the action runs as (batond's own user without `user`).
    /// A bare name is looked up in PATH at each run, and is not checked here.
    mutating func checkProgram(_ action: Action, at: String) {
        guard let program = action.exec.first, program.hasPrefix("/") else { return }
        var info = stat()
        guard stat(program, &info) == 0 else {
            let why = errno == ENOENT ? "does not exist" : "cannot be looked at (\(String(cString: strerror(errno))))"
            return warn("\(at).exec", "\(program) \(why): each run fails until it is there")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return warn("\(at).exec", "\(program) is not a file: each run fails until it is one")
        }
        let user = action.runAs.map { (uid: $0.uid, groups: Set([$0.gid] + $0.groups), name: $0.user) }
            ?? (uid: geteuid(), groups: Set([getegid()] + Self.supplementaryGroups()), name: "batond's user")
        if !Self.mayExecute(mode: UInt32(info.st_mode), owner: info.st_uid, group: info.st_gid, uid: user.uid, groups: user.groups) {
            warn("\(at).exec", "\(program) is not executable by \(user.name) (mode \(String(info.st_mode & 0o7777, radix: 8))): each run fails until it is")
        }
    }

    /// Whether `uid` in `groups` may execute a file of that mode and owner, as the kernel decides
    /// it (root: any execute bit; else the owner's, the group's or the others' bits, the first that applies).
    static func mayExecute(mode: UInt32, owner: UInt32, group: UInt32, uid: UInt32, groups: Set<UInt32>) -> Bool {
        if uid == 0 { return mode & 0o111 != 0 }
        if uid == owner { return mode & 0o100 != 0 }
        if groups.contains(group) { return mode & 0o010 != 0 }
        return mode & 0o001 != 0
    }

    /// batond's supplementary groups.
    private static func supplementaryGroups() -> [UInt32] {
        let count = getgroups(0, nil)
        guard count > 0 else { return [] }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let got = getgroups(count, &groups)
        return got > 0 ? Array(groups.prefix(Int(got))) : []
    }
}
