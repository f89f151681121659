import BatonEngine
import BatonRuntime
import FoundationEssentials
import Glibc

extension Peer {
    /// Every group the peer's user is in: its gid from `SO_PEERCRED` and the groups of its uid in
    /// the user database.
    public var groups: [UInt32] {
        let known = databaseGroups
        return known.contains(gid) ? known : known + [gid]
    }

    /// The groups of the peer's uid in the user database (its primary group and supplementary
    /// groups, `getgrouplist`); empty for a uid with no entry.
    public var databaseGroups: [UInt32] {
        var buffer = [CChar](repeating: 0, count: 4096)
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name else { return [] }
        return UserDatabase.groups(of: String(cString: name), primary: entry.pw_gid)
    }

    /// `uid 1000 (alice)`, for messages.
    public var described: String {
        UserDatabase.userName(uid).map { "uid \(uid) (\($0))" } ?? "uid \(uid)"
    }
}
