/// What the dashboard serves, by method and path: the page (at `/` and at each run's address),
/// its three files, the sign-in, the JSON API, the event stream, and a run's output (as a stream,
/// and raw).
public enum Route: Equatable, Sendable {
    case page
    case asset(String)
    /// Chart.js, the system's copy (Debian's libjs-chart.js), read when the dashboard starts.
    case chartLibrary
    /// Outcomes, durations and usage per action (`/api/stats`, optional `action`).
    case stats
    case status
    case history
    /// Runs whose kept output holds a text (`/api/search?text=…`, with the history's filters).
    case search
    case run(Int64)
    case events
    /// A run's output as an event stream (`/api/runs/42/output`), resumable by byte offset.
    case output(Int64)
    /// A run's output as the bytes it wrote, to save (`/api/runs/42/output.raw`).
    case rawOutput(Int64)
    /// The files a run kept (`/api/runs/42/artifacts`).
    case artifacts(Int64)
    /// One of them, to save (`/api/runs/42/artifacts/dist%2Fapp.tar.gz`: the name percent-encoded).
    case artifact(Int64, String)
    case trigger
    case cancel
    /// Approves or denies a run waiting for approval (`{"run": 42, "approve": true}`).
    case approval
    /// The runs waiting for the signed-in user's approval.
    case approvals
    /// Trades a one-time code for a session.
    case session

    /// The route of a path, and the one method it takes; nil for an unknown path.
    public static func of(path: String) -> (route: Route, method: String)? {
        switch path {
        case "/": return (.page, "GET")
        case "/app.js", "/charts.js", "/app.css", "/icon.svg": return (.asset(String(path.dropFirst())), "GET")
        case "/api/status": return (.status, "GET")
        case "/api/history": return (.history, "GET")
        case "/api/stats": return (.stats, "GET")
        case "/chart.js": return (.chartLibrary, "GET")
        case "/api/search": return (.search, "GET")
        case "/api/trigger": return (.trigger, "POST")
        case "/api/cancel": return (.cancel, "POST")
        case "/api/approval": return (.approval, "POST")
        case "/api/approvals": return (.approvals, "GET")
        case "/api/session": return (.session, "POST")
        case "/events": return (.events, "GET")
        default: break
        }
        // An action's page (`/actions/deploy`: the page reads the name from its address).
        if path.hasPrefix("/actions/"), path.count > "/actions/".count, path.count <= "/actions/".count + 3 * 64 { return (.page, "GET") }
        // A run's page (`/runs/42`), its data (`/api/runs/42`) and its output.
        if path.hasPrefix("/runs/") { return runID(path.dropFirst("/runs/".count)).map { _ in (.page, "GET") } }
        guard path.hasPrefix("/api/runs/") else { return nil }
        let rest = path.dropFirst("/api/runs/".count)
        let digits = rest.prefix { $0 != "/" && $0 != "." }
        guard let id = runID(digits) else { return nil }
        switch rest.dropFirst(digits.count) {
        case "": return (.run(id), "GET")
        case "/output": return (.output(id), "GET")
        case "/output.raw": return (.rawOutput(id), "GET")
        case "/artifacts": return (.artifacts(id), "GET")
        case let tail where tail.hasPrefix("/artifacts/") && tail.count > "/artifacts/".count:
            let name = QueryString.unescapePath(tail.dropFirst("/artifacts/".count))
            return name.isEmpty || name.utf8.count > 4_096 ? nil : (.artifact(id, name), "GET")
        default: return nil
        }
    }

    /// A run id of at most 18 ASCII digits.
    private static func runID(_ digits: Substring) -> Int64? {
        guard digits.count <= 18, !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit) else { return nil }
        return Int64(digits)
    }

    /// Whether the route changes state (and so needs a same-origin POST of JSON).
    public var changesState: Bool { self == .trigger || self == .cancel || self == .approval || self == .session }

    /// Whether the route answers with an event stream (which has no HEAD: it never ends).
    public var isStream: Bool {
        switch self {
        case .events, .output, .artifact: true
        default: false
        }
    }

    /// Whether the route needs a signed-in page: all but the page's own files (the same for
    /// everyone, and loaded by the browser itself, which cannot add the session to them) and the
    /// sign-in.
    public var needsSession: Bool {
        switch self {
        case .page, .asset, .chartLibrary, .session: false
        case .status, .history, .search, .stats, .run, .events, .output, .rawOutput, .artifacts, .artifact, .trigger, .cancel, .approval, .approvals: true
        }
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
