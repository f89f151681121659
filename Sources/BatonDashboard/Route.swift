/// What the dashboard serves, by method and path: the page (at `/` and at each run's address),
/// its three files, the sign-in, the JSON API and the event stream.
public enum Route: Equatable, Sendable {
    case page
    case asset(String)
    case status
    case history
    case run(Int64)
    case events
    case trigger
    case cancel
    /// Trades a one-time code for a session.
    case session

    /// The route of a path, and the one method it takes; nil for an unknown path.
    public static func of(path: String) -> (route: Route, method: String)? {
        switch path {
        case "/": return (.page, "GET")
        case "/app.js", "/app.css", "/icon.svg": return (.asset(String(path.dropFirst())), "GET")
        case "/api/status": return (.status, "GET")
        case "/api/history": return (.history, "GET")
        case "/api/trigger": return (.trigger, "POST")
        case "/api/cancel": return (.cancel, "POST")
        case "/api/session": return (.session, "POST")
        case "/events": return (.events, "GET")
        default: break
        }
        // A run's page (`/runs/42`) and its data (`/api/runs/42`).
        for (prefix, page) in [("/runs/", true), ("/api/runs/", false)] where path.hasPrefix(prefix) {
            let digits = path.dropFirst(prefix.count)
            guard digits.count <= 18, !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit), let id = Int64(digits) else { return nil }
            return (page ? .page : .run(id), "GET")
        }
        return nil
    }

    /// Whether the route changes state (and so needs a same-origin POST of JSON).
    public var changesState: Bool { self == .trigger || self == .cancel || self == .session }

    /// Whether the route needs a signed-in page: all but the page's own files (the same for
    /// everyone, and loaded by the browser itself, which cannot add the session to them) and the
    /// sign-in.
    public var needsSession: Bool {
        switch self {
        case .page, .asset, .session: false
        case .status, .history, .run, .events, .trigger, .cancel: true
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
