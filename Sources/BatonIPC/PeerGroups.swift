import BatonCore
import Foundation

extension Peer {
    /// Every group the peer's user is in: its gid from `SO_PEERCRED` and the supplementary
    /// groups of its uid in the user database (`getgrouplist`).
    public var groups: [UInt32] {
        var result: Set<UInt32> = [gid]
        var buffer = [CChar](repeating: 0, count: 4096)
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name else {
            return Array(result)
        }
        for group in UserDatabase.groups(of: String(cString: name), primary: entry.pw_gid) { result.insert(group) }
        return Array(result)
    }

    /// `uid 1000 (alice)`, for messages.
    public var described: String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "uid \(uid) (\(String(cString: name)))"
    }
}
