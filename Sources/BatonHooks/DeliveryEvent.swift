import BatonIPC

/// The kind of event a delivery reports, as its sender names it in a header: GitHub's
/// `X-GitHub-Event: push`, GitLab's `X-Gitlab-Event: Push Hook`, a sender of one's own
/// `X-Baton-Event: nightly`. Names are compared as `name(_:)` writes them, so the config may
/// spell a GitLab event either way (`"push"` or `"Push Hook"`).
public enum DeliveryEvent {
    /// The event forges send when a hook is created or tested: answered `pong`, never a run.
    public static let ping = "ping"
    /// In a hook's `events`, alone: every request, whether it names an event or not.
    public static let any = "*"
    /// The longest event name taken.
    public static let maxLength = 64

    /// The one spelling of an event: lower case, GitLab's final word `Hook` dropped, words joined
    /// by `_` (`Tag Push Hook` is `tag_push`, as GitLab's `object_kind` says it; `pull_request`
    /// stays as GitHub writes it).
    public static func name(_ text: String) -> String {
        var words = text.lowercased().split(separator: " ")
        if words.count > 1, words.last == "hook" { words.removeLast() }
        return words.joined(separator: "_")
    }

    /// Whether a spelled name is one an event may have: 1 to 64 of `a-z`, `0-9`, `_`, `-`, `.`.
    public static func isValid(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maxLength && name.utf8.allSatisfy { byte in
            (byte >= 97 && byte <= 122) || (byte >= 48 && byte <= 57) || byte == 95 || byte == 45 || byte == 46
        }
    }

    /// The header fields that name a delivery's event under `scheme`, in the order looked at
    /// (Gitea and Forgejo send `X-GitHub-Event` as well as their own).
    public static func fields(_ scheme: SignatureScheme) -> [String] {
        switch scheme {
        case .github: ["x-github-event", "x-gitea-event"]
        case .gitlab: ["x-gitlab-event"]
        case .hmacSHA256: ["x-baton-event"]
        }
    }

    /// The field that names the event under `scheme`, as its sender spells it (for messages).
    public static func header(_ scheme: SignatureScheme) -> String {
        switch scheme {
        case .github: "X-GitHub-Event"
        case .gitlab: "X-Gitlab-Event"
        case .hmacSHA256: "X-Baton-Event"
        }
    }

    /// What a request's event is.
    public enum Named: Sendable, Equatable {
        /// The event, spelled by `name(_:)`.
        case event(String)
        /// No field names one.
        case none
        /// The first field there is given twice, or its value is no event name: matches no list.
        case unreadable
    }

    /// The event the first of the scheme's fields that is present names.
    public static func of(_ head: HTTPRequestHead, _ scheme: SignatureScheme) -> Named {
        guard let field = fields(scheme).first(where: { head.field($0) != nil }) else { return .none }
        guard let value = head.only(field) else { return .unreadable }
        let event = name(value)
        return isValid(event) ? .event(event) : .unreadable
    }

    /// The events a hook takes when its config lists none: a forge's pushes (it sends whatever
    /// else the repository is set to, which is not a reason to deploy); every request of one's own.
    public static func defaults(_ scheme: SignatureScheme) -> Set<String>? {
        switch scheme {
        case .github, .gitlab: ["push"]
        case .hmacSHA256: nil
        }
    }
}
