import BatonEngine
import BatonRuntime
import FoundationEssentials
import Glibc

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

    /// The name of a uid, or nil when the user database has none. Reentrant (`getpwuid_r`): batond
    /// looks users up on several threads at once (a spawner's run-as, the lookup thread, a reload).
    public static func userName(_ uid: UInt32) -> String? {
        account(String(uid))?.name
    }

    /// One entry of the user database.
    public struct Account: Sendable, Equatable {
        public var name: String
        public var uid: UInt32
        public var gid: UInt32
        public var home: String
        public var shell: String
    }

    /// The user a name (or, when it is a number, a uid) names now, or nil.
    public static func account(_ named: String) -> Account? {
        var buffer = [CChar](repeating: 0, count: 16_384)
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        let rc = UInt32(named).map { getpwuid_r($0, &entry, &buffer, buffer.count, &found) }
            ?? getpwnam_r(named, &entry, &buffer, buffer.count, &found)
        guard rc == 0, found != nil, let name = entry.pw_name else { return nil }
        return Account(name: String(cString: name), uid: entry.pw_uid, gid: entry.pw_gid,
                       home: entry.pw_dir.map { String(cString: $0) } ?? "/",
                       shell: entry.pw_shell.map { String(cString: $0) } ?? "/bin/sh")
    }

    /// The gid a group name (or number) names now, or nil.
    public static func groupID(_ named: String) -> UInt32? {
        if let id = UInt32(named) { return id }
        var buffer = [CChar](repeating: 0, count: 16_384)
        var entry = group()
        var found: UnsafeMutablePointer<group>?
        guard getgrnam_r(named, &entry, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        return entry.gr_gid
    }
}
