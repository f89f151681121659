import BatonEngine
import BatonRuntime
#if canImport(Glibc)
import Glibc
#endif

extension RunAs {
    /// Why a run-as identity cannot be used now.
    public enum LookupError: Error, Equatable, CustomStringConvertible {
        case noUser(String)
        case noGroup(String)

        public var description: String {
            switch self {
            case let .noUser(name): "no user named \(Action.quoted(name))"
            case let .noGroup(name): "no group named \(Action.quoted(name))"
            }
        }
    }

    /// Looks the configured names up in the user and group databases as they are now: a name
    /// by name, a number by number.
    public static func lookUp(_ named: String, group groupNamed: String? = nil) -> Result<RunAs, LookupError> {
        guard let account = UserDatabase.account(named) else { return .failure(.noUser(named)) }
        var gid = account.gid
        if let groupNamed {
            guard let found = UserDatabase.groupID(groupNamed) else { return .failure(.noGroup(groupNamed)) }
            gid = found
        }
        return .success(RunAs(named: named, groupNamed: groupNamed, user: account.name, uid: account.uid, gid: gid,
                              groups: UserDatabase.groups(of: account.name, primary: gid), home: account.home,
                              shell: account.shell))
    }

    /// This identity looked up again, as each start does.
    public func resolved() -> Result<RunAs, LookupError> { Self.lookUp(named, group: groupNamed) }
}
