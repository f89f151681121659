import BatonCore

/// A question with one answer: the request batond is sent and how its final answer reads. Both
/// clients ask it, `BatonClient` among its other calls and `OneShotClient` on the calling
/// thread, so what a query means is written once.
public struct BatonQuery<Value>: Sendable {
    let request: Request
    let read: @Sendable (Response) throws -> Value
    /// The event whose lines carry the first pages of a long answer (`runs` for `history`); the
    /// final answer is read with them put back in front (`gathered`).
    let pages: String?

    init(_ request: Request, pages: String? = nil, read: @escaping @Sendable (Response) throws -> Value) {
        self.request = request
        self.pages = pages
        self.read = read
    }

    /// The same question, its answer read on by `transform`.
    public func map<Other>(_ transform: @escaping @Sendable (Value) throws -> Other) -> BatonQuery<Other> {
        BatonQuery<Other>(request, pages: pages) { [read] in try transform(try read($0)) }
    }

    /// The same question asked on behalf of `user` (the request field `as`): batond answers it as
    /// for that account, and honours it only from root and its own user (`forbidden` otherwise).
    public func acting(as user: String) -> BatonQuery<Value> {
        var request = request
        request.actingAs = user
        return BatonQuery(request, pages: pages, read: read)
    }

    /// Whether `event` is a page of this question's answer.
    func isPage(_ event: Response) -> Bool { pages != nil && event.event == pages }

    /// The final answer with the pages sent before it in front, in order, as one answer.
    static func gathered(_ final: Response, _ pages: [Response]) -> Response {
        guard !pages.isEmpty, final.ok == true else { return final }
        var whole = final
        whole.runs = pages.flatMap { $0.runs ?? [] } + (final.runs ?? [])
        return whole
    }
}

extension BatonQuery where Value == BatonStatus {
    /// Every action the peer may read, with its runs in flight and its last ended run.
    public static var status: Self {
        Self(Request(op: .status)) { BatonStatus(actions: $0.actions ?? [], storeProblem: $0.storeProblem, processTree: $0.processTree) }
    }
}

extension BatonQuery where Value == [RunSnapshot] {
    /// The runs `filter` selects, newest first (oldest first with `reverse`), 50 by default.
    public static func history(_ filter: HistoryFilter = HistoryFilter()) -> Self {
        Self(Request(op: .history, filter: filter), pages: "runs") { $0.runs ?? [] }
    }
}

extension BatonQuery where Value == RunDetail {
    /// A run's whole story; `.unknownRun` when no run has that id.
    public static func show(_ run: Int64) -> Self {
        Self(Request(op: .show, run: run)) { response in
            guard let detail = response.detail else { throw BatonClientError.internal("batond answered show \(run) without its detail") }
            return detail
        }
    }
}

extension BatonQuery where Value == [ActionInfo] {
    /// The configured actions the peer may read.
    public static var actions: Self { Self(Request(op: .actions)) { $0.actions ?? [] } }
}

extension BatonQuery where Value == [ActionStats] {
    /// Counts, success rate and duration percentiles per action, of the runs `filter` selects.
    public static func stats(_ filter: HistoryFilter = HistoryFilter()) -> Self {
        Self(Request(op: .stats, filter: filter)) { $0.stats ?? [] }
    }
}

extension BatonQuery where Value == [TriggerRecord] {
    /// The latest requests batond refused for lack of permission, newest first (root only).
    public static func denied(limit: Int = 50) -> Self {
        Self(Request(op: .denied, filter: HistoryFilter(limit: limit))) { $0.triggers ?? [] }
    }
}

extension BatonQuery where Value == [ActionEvent] {
    /// The actions' pauses and resumes `filter` selects (its actions, window and limit), newest first.
    public static func events(_ filter: HistoryFilter = HistoryFilter()) -> Self {
        Self(Request(op: .events, filter: filter)) { $0.events ?? [] }
    }
}

extension BatonQuery where Value == String {
    /// batond's metrics in Prometheus' text exposition format.
    public static var metrics: Self { Self(Request(op: .metrics)) { $0.metrics ?? "" } }
    /// batond's version (`ping`).
    public static var version: Self { Self(Request(op: .ping)) { $0.version ?? "" } }
}

extension BatonQuery where Value == PruneReport {
    /// Removes the ended runs that retention no longer keeps (with `dryRun`, only counts them).
    public static func prune(dryRun: Bool = false) -> Self {
        Self(Request(op: .prune, dryRun: dryRun)) { $0.prune ?? PruneReport(dryRun: dryRun) }
    }
}

extension BatonQuery where Value == [String] {
    /// Makes batond read its config again; a config with errors is refused (`.badRequest`). The
    /// value: batond's warnings about the config it applied (empty when it had none).
    public static var reload: Self { Self(Request(op: .reload)) { $0.warnings ?? [] } }
}

extension BatonQuery where Value == Bool {
    /// Makes batond restart in place (as SIGUSR2 does): it hands its runs over to the new batond,
    /// which its socket's backlog keeps every connection for. True once asked.
    public static var restart: Self { Self(Request(op: .restart)) { _ in true } }
}

extension BatonQuery where Value == SearchResult {
    /// The runs `filter` selects whose kept output or param values hold `text` (case ignored),
    /// newest first, each with its first matching lines and their numbers; and where the search
    /// stopped if it read its most bytes of output first.
    public static func search(_ text: String, _ filter: HistoryFilter = HistoryFilter(limit: 20)) -> Self {
        Self(Request(op: .search, filter: filter, text: text)) { SearchResult(matches: $0.matches ?? [], cut: $0.searchCut) }
    }
}
