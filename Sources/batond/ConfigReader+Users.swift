import BatonCore
import FoundationEssentials

/// `requireUser`: whom an action without `user` runs as, said out loud. Such an action runs as
/// batond's own user, which for the service is root: whoever may trigger it (by default the
/// group of the socket, `baton`) then runs its command as root.
extension ConfigReader {
    /// True refuses every action that names no `user` (at start, at reload, by `--check-config`);
    /// unset, a root batond warns of them; false says that running them as batond's user is meant.
    mutating func requireUser(_ value: JSONValue?, actions: [String: JSONValue]) {
        var required: Bool?
        if let value {
            guard case let .bool(flag) = value else {
                fail("requireUser", "expected true or false, got \(value.kind)")
                return
            }
            required = flag
        }
        let unnamed = actions.keys.sorted().filter { name in
            if case let .object(fields) = actions[name] { fields["user"] == nil } else { false }
        }
        guard !unnamed.isEmpty else { return }
        switch required {
        case true?:
            for name in unnamed {
                fail("actions.\(name).user", "missing, and requireUser is true: name the user it runs as, "
                    + "user: \"root\" if it must run as root (an unprivileged one such as user: \"nobody\" where it need not)")
            }
        case nil where runsAsRoot:
            let (listed, them) = unnamed.count == 1 ? ("\(unnamed[0]) names", "it") : ("\(unnamed.joined(separator: ", ")) name", "them")
            warn("actions", "\(listed) no user, so batond (root) runs \(them) as root for whoever may trigger \(them): "
                + "give each a user (user: \"root\" if you mean it), then set requireUser: true to refuse any that names none "
                + "(or requireUser: false to say root is meant)")
        default:
            break
        }
    }
}
