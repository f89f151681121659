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
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, entry.pw_gid, &list, &count) < 0 {
            list = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(name, entry.pw_gid, &list, &count)
        }
        for group in list.prefix(Int(max(count, 0))) { result.insert(group) }
        return Array(result)
    }

    /// `uid 1000 (alice)`, for messages.
    public var described: String {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return "uid \(uid)" }
        return "uid \(uid) (\(String(cString: name)))"
    }
}
