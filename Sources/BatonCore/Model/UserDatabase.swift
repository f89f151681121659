import Foundation

/// Lookups in the system's user and group databases.
public enum UserDatabase {
    /// Every group a user is in: `primary` and its supplementary groups (`getgrouplist`).
    public static func groups(of user: String, primary: UInt32) -> [UInt32] {
        var count: Int32 = 64
        var list = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(user, primary, &list, &count) < 0 {
            list = [gid_t](repeating: 0, count: Int(count))
            _ = getgrouplist(user, primary, &list, &count)
        }
        return Array(list.prefix(Int(max(count, 0))))
    }

    /// The name of a uid, or nil when the user database has none.
    public static func userName(_ uid: UInt32) -> String? {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
    }
}
